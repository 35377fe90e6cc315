#include "client/rtsp/sdp.hpp"

#include <array>
#include <charconv>
#include <limits>

namespace vigil::client::rtsp {
namespace {

constexpr std::string_view kWhitespace = " \t";
// A bandwidth above this (1 Tbit/s) is not a camera's: read as absent rather than trusted.
constexpr std::int64_t kMaxBandwidthBps = 1'000'000'000'000;
constexpr int kMaxClockRateHz = 10'000'000;

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(kWhitespace);
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(kWhitespace);
  return s.substr(first, last - first + 1);
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

template <typename Int>
std::optional<Int> parse_int(std::string_view s) {
  s = trim(s);
  Int v{};
  const auto* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc{} || ptr != end) return std::nullopt;
  return v;
}

// Standard base64 (RFC 4648 §4). Padding is optional (some cameras leave it out) but, where
// present, only at the end and only as much as the last group needs. nullopt for anything else.
std::optional<std::vector<std::uint8_t>> decode_base64(std::string_view text) {
  static constexpr auto kTable = [] {
    std::array<std::int8_t, 256> t{};
    t.fill(-1);
    constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (std::size_t i = 0; i < alphabet.size(); ++i)
      t[static_cast<unsigned char>(alphabet[i])] = static_cast<std::int8_t>(i);
    return t;
  }();
  text = trim(text);
  std::size_t pad = 0;
  while (!text.empty() && text.back() == '=' && pad < 2) {
    text.remove_suffix(1);
    ++pad;
  }
  // Sextets left in the last group: 0 (none), 2 (one byte), 3 (two bytes); 1 cannot be.
  const std::size_t tail = text.size() % 4;
  if (tail == 1) return std::nullopt;
  if (pad != 0 && pad != (4 - tail) % 4) return std::nullopt;
  std::vector<std::uint8_t> out;
  out.reserve(text.size() / 4 * 3 + 2);
  std::uint32_t acc = 0;
  int bits = 0;
  for (const char c : text) {
    const int v = kTable[static_cast<unsigned char>(c)];
    if (v < 0) return std::nullopt;  // '=' inside, whitespace, URL-safe alphabet: not ours
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<std::uint8_t>(acc >> bits));
      acc &= (1u << bits) - 1;
    }
  }
  return out;
}

// Each comma-separated base64 parameter set of VALUE appended to OUT after a 4-byte start code.
// An entry that is not base64 is left out (the stream carries its parameter sets in band too;
// a camera's typo in an optional attribute is no reason to refuse its video).
void append_parameter_sets(std::string_view value, std::vector<std::uint8_t>& out) {
  while (!value.empty()) {
    const auto comma = value.find(',');
    const auto item = value.substr(0, comma);
    value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
    auto nal = decode_base64(item);
    if (!nal || nal->empty()) continue;
    out.insert(out.end(), {0, 0, 0, 1});
    out.insert(out.end(), nal->begin(), nal->end());
  }
}

// b=AS:<kbit/s> or b=TIAS:<bit/s> (RFC 3890); TIAS wins where both are given (it is exact).
struct Bandwidth {
  std::int64_t as_bps = 0, tias_bps = 0;
  void read(std::string_view value) {
    const auto colon = value.find(':');
    if (colon == std::string_view::npos) return;
    const auto kind = trim(value.substr(0, colon));
    const auto n = parse_int<std::int64_t>(value.substr(colon + 1));
    if (!n || *n <= 0) return;
    if (iequals(kind, "AS") && *n <= kMaxBandwidthBps / 1000) as_bps = *n * 1000;
    if (iequals(kind, "TIAS") && *n <= kMaxBandwidthBps) tias_bps = *n;
  }
  std::int64_t bps() const { return tias_bps > 0 ? tias_bps : as_bps; }
};

struct Rtpmap {
  int payload_type = 0;
  VideoCodec codec = VideoCodec::h264;
  int clock_rate_hz = 0;
};

// One m= section: what the parser keeps of it.
struct MediaSection {
  bool video = false;
  std::vector<int> formats;     // the m= line's payload types, in order of preference
  std::vector<Rtpmap> rtpmaps;  // the H.264 / H.265 ones only
  std::vector<std::pair<int, std::string_view>> fmtps;
  std::string_view control;
  Bandwidth bandwidth;
};

// "m=video 0 RTP/AVP 96 97": the media type and its formats.
void read_media_line(std::string_view value, MediaSection& m) {
  const auto sp = value.find(' ');
  m.video = value.substr(0, sp) == "video";
  if (sp == std::string_view::npos) return;
  value = value.substr(sp + 1);
  for (int field = 0; !value.empty(); ++field) {
    const auto next = value.find(' ');
    const auto word = value.substr(0, next);
    value = next == std::string_view::npos ? std::string_view{} : value.substr(next + 1);
    if (field < 2) continue;  // port, protocol
    if (auto pt = parse_int<int>(word); pt && *pt >= 0 && *pt <= 127) m.formats.push_back(*pt);
  }
}

// "a=rtpmap:96 H264/90000": kept if H.264 or H.265. A bad clock rate is an error (WHY set).
bool read_rtpmap(std::string_view value, MediaSection& m, std::string& why) {
  value = trim(value);
  const auto sp = value.find_first_of(kWhitespace);
  if (sp == std::string_view::npos) return true;
  const auto pt = parse_int<int>(value.substr(0, sp));
  if (!pt || *pt < 0 || *pt > 127) return true;
  const auto encoding = trim(value.substr(sp + 1));
  const auto slash = encoding.find('/');
  const auto name = encoding.substr(0, slash);
  Rtpmap r{.payload_type = *pt};
  if (iequals(name, "H264")) {
    r.codec = VideoCodec::h264;
  } else if (iequals(name, "H265")) {
    r.codec = VideoCodec::h265;
  } else {
    return true;
  }
  auto clock = encoding.substr(slash == std::string_view::npos ? encoding.size() : slash + 1);
  clock = clock.substr(0, clock.find('/'));  // a channel count would follow (audio only)
  const auto hz = parse_int<int>(clock);
  if (!hz || *hz <= 0 || *hz > kMaxClockRateHz) {
    why = "bad clock rate in the SDP's a=rtpmap:" + std::string(value);
    return false;
  }
  r.clock_rate_hz = *hz;
  m.rtpmaps.push_back(r);
  return true;
}

// The video of section M, or nullopt where it has no H.264 / H.265 format.
std::optional<SdpVideo> video_of(const MediaSection& m, const Bandwidth& session_bandwidth) {
  if (!m.video || m.rtpmaps.empty()) return std::nullopt;
  // The m= line's order is the sender's preference; an rtpmap it does not list is still taken
  // (after those it lists) rather than refusing a camera over a sloppy m= line.
  const Rtpmap* chosen = nullptr;
  for (const int pt : m.formats) {
    for (const auto& r : m.rtpmaps) {
      if (r.payload_type == pt && chosen == nullptr) chosen = &r;
    }
  }
  if (chosen == nullptr) chosen = &m.rtpmaps.front();
  SdpVideo v;
  v.codec = chosen->codec;
  v.payload_type = chosen->payload_type;
  v.clock_rate_hz = chosen->clock_rate_hz;
  v.control = std::string(m.control);
  v.bandwidth_bps = m.bandwidth.bps() > 0 ? m.bandwidth.bps() : session_bandwidth.bps();
  for (const auto& [pt, params] : m.fmtps) {
    if (pt != v.payload_type) continue;
    // "packetization-mode=1;sprop-parameter-sets=Z0I...,aM4...;profile-level-id=42c015"
    std::string_view sets_h264, vps, sps, pps;
    std::string_view rest = params;
    while (!rest.empty()) {
      const auto semi = rest.find(';');
      const auto param = trim(rest.substr(0, semi));
      rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
      const auto eq = param.find('=');
      if (eq == std::string_view::npos) continue;
      const auto key = trim(param.substr(0, eq));
      const auto value = trim(param.substr(eq + 1));
      if (iequals(key, "sprop-parameter-sets")) sets_h264 = value;
      if (iequals(key, "sprop-vps")) vps = value;
      if (iequals(key, "sprop-sps")) sps = value;
      if (iequals(key, "sprop-pps")) pps = value;
    }
    v.parameter_sets.clear();
    if (v.codec == VideoCodec::h264) {
      append_parameter_sets(sets_h264, v.parameter_sets);
    } else {
      append_parameter_sets(vps, v.parameter_sets);
      append_parameter_sets(sps, v.parameter_sets);
      append_parameter_sets(pps, v.parameter_sets);
    }
  }
  return v;
}

// An audio m= section as read: every rtpmap (any encoding) and fmtp.
struct AudioSection {
  std::vector<int> formats;
  struct Map {
    int payload_type = 0;
    std::string_view name{};
    int clock_rate_hz = 0, channels = 1;
  };
  std::vector<Map> rtpmaps;
  std::vector<std::pair<int, std::string_view>> fmtps;
  std::string_view control;
  Bandwidth bandwidth;
};

// "a=rtpmap:97 MPEG4-GENERIC/48000/2". Unreadable ones are left out.
void read_audio_rtpmap(std::string_view value, AudioSection& m) {
  value = trim(value);
  const auto sp = value.find_first_of(kWhitespace);
  if (sp == std::string_view::npos) return;
  const auto pt = parse_int<int>(value.substr(0, sp));
  if (!pt || *pt < 0 || *pt > 127) return;
  auto encoding = trim(value.substr(sp + 1));
  AudioSection::Map r{.payload_type = *pt};
  const auto slash = encoding.find('/');
  r.name = encoding.substr(0, slash);
  if (slash != std::string_view::npos) {
    encoding = encoding.substr(slash + 1);
    const auto second = encoding.find('/');
    const auto hz = parse_int<int>(encoding.substr(0, second));
    if (!hz || *hz <= 0 || *hz > kMaxClockRateHz) return;
    r.clock_rate_hz = *hz;
    if (second != std::string_view::npos) {
      const auto channels = parse_int<int>(encoding.substr(second + 1));
      if (!channels || *channels < 1 || *channels > 255) return;
      r.channels = *channels;
    }
  }
  m.rtpmaps.push_back(r);
}

// KEY's value in an fmtp's "k=v;k=v" parameters; empty when absent.
std::string_view fmtp_value(std::string_view params, std::string_view key) {
  while (!params.empty()) {
    const auto semi = params.find(';');
    const auto param = trim(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view{} : params.substr(semi + 1);
    const auto eq = param.find('=');
    if (eq != std::string_view::npos && iequals(trim(param.substr(0, eq)), key)) return trim(param.substr(eq + 1));
  }
  return {};
}

std::optional<std::vector<std::uint8_t>> decode_hex(std::string_view text) {
  if (text.empty() || text.size() % 2 != 0) return std::nullopt;
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i < text.size(); i += 2) {
    std::uint8_t byte = 0;
    const auto [ptr, ec] = std::from_chars(text.data() + i, text.data() + i + 2, byte, 16);
    if (ec != std::errc{} || ptr != text.data() + i + 2) return std::nullopt;
    out.push_back(byte);
  }
  return out;
}

// Format PT of section M as this session reads it; nullopt with WHY naming what it is otherwise.
std::optional<SdpAudio> audio_format(const AudioSection& m, int pt, std::string& why) {
  const AudioSection::Map* map = nullptr;
  for (const auto& r : m.rtpmaps) {
    if (r.payload_type == pt) map = &r;
  }
  // RFC 3551's static payload types need no rtpmap.
  AudioSection::Map fixed{.payload_type = pt, .clock_rate_hz = 8000, .channels = 1};
  if (!map && (pt == 0 || pt == 8)) {
    fixed.name = pt == 0 ? "PCMU" : "PCMA";
    map = &fixed;
  }
  if (!map) {
    why = "payload type " + std::to_string(pt) + " (no rtpmap)";
    return std::nullopt;
  }
  std::string_view params;
  for (const auto& [fpt, f] : m.fmtps) {
    if (fpt == pt) params = f;
  }
  SdpAudio a;
  a.payload_type = pt;
  a.clock_rate_hz = map->clock_rate_hz;
  a.channels = map->channels;
  if ((iequals(map->name, "PCMU") || iequals(map->name, "PCMA")) && map->clock_rate_hz == 8000) {
    a.codec = iequals(map->name, "PCMU") ? AudioCodec::pcm_mulaw : AudioCodec::pcm_alaw;
  } else if (iequals(map->name, "OPUS") && map->clock_rate_hz == 48000) {
    a.codec = AudioCodec::opus;
  } else if (iequals(map->name, "MPEG4-GENERIC") && map->clock_rate_hz > 0) {
    const auto mode = fmtp_value(params, "mode");
    auto config = decode_hex(fmtp_value(params, "config"));
    if (!iequals(mode, "AAC-hbr") || fmtp_value(params, "sizelength") != "13" ||
        fmtp_value(params, "indexlength") != "3" || !config) {
      why = "MPEG4-GENERIC (mode " + std::string(mode.empty() ? "unsaid" : mode) +
            "; this session reads mode AAC-hbr with sizelength=13, indexlength=3 and a config)";
      return std::nullopt;
    }
    a.codec = AudioCodec::aac;
    a.config = std::move(*config);
  } else {
    why = std::string(map->name) + "/" + std::to_string(map->clock_rate_hz);
    return std::nullopt;
  }
  a.control = std::string(m.control);
  a.bandwidth_bps = m.bandwidth.bps();
  return a;
}

// One "x=value" line of an SDP description.
struct SdpLine {
  char type;
  std::string_view value;
};

// The next well-formed line of SDP (CRLF or LF ends), consumed from SDP; nullopt at its end.
std::optional<SdpLine> next_line(std::string_view& sdp) {
  while (!sdp.empty()) {
    const auto nl = sdp.find('\n');
    auto line = sdp.substr(0, nl);
    sdp = nl == std::string_view::npos ? std::string_view{} : sdp.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() < 2 || line[1] != '=') continue;
    return SdpLine{line[0], line.substr(2)};
  }
  return std::nullopt;
}

// An a= line's name and argument ("rtpmap" and "96 H264/90000").
std::pair<std::string_view, std::string_view> split_attribute(std::string_view value) {
  const auto colon = value.find(':');
  return {value.substr(0, colon), colon == std::string_view::npos ? std::string_view{} : value.substr(colon + 1)};
}

// An a=fmtp argument ("96 packetization-mode=1;...") into FMTPS; one without a payload type is left out.
void read_fmtp(std::string_view arg, std::vector<std::pair<int, std::string_view>>& fmtps) {
  const auto t = trim(arg);
  const auto sp = t.find_first_of(kWhitespace);
  const auto pt = parse_int<int>(t.substr(0, sp));
  if (pt && sp != std::string_view::npos) fmtps.emplace_back(*pt, trim(t.substr(sp + 1)));
}

}  // namespace

std::optional<SdpAudio> parse_sdp_audio(std::string_view sdp, std::string& skipped) {
  skipped.clear();
  std::optional<AudioSection> audio;  // the audio section being read
  const auto choose = [&]() -> std::optional<SdpAudio> {
    for (const int pt : audio->formats) {
      std::string why;
      if (auto a = audio_format(*audio, pt, why)) return a;
      if (skipped.empty()) skipped = why;
    }
    return std::nullopt;
  };
  while (const auto line = next_line(sdp)) {
    const char type = line->type;
    const auto value = line->value;
    if (type == 'm') {
      if (audio) {
        if (auto a = choose()) return a;
      }
      audio.reset();
      if (value.substr(0, value.find(' ')) != "audio") continue;
      audio.emplace();
      MediaSection formats;
      read_media_line(value, formats);
      audio->formats = std::move(formats.formats);
      continue;
    }
    if (!audio) continue;
    if (type == 'b') {
      audio->bandwidth.read(value);
      continue;
    }
    if (type != 'a') continue;
    const auto [name, arg] = split_attribute(value);
    if (name == "rtpmap") {
      read_audio_rtpmap(arg, *audio);
    } else if (name == "fmtp") {
      read_fmtp(arg, audio->fmtps);
    } else if (name == "control") {
      audio->control = trim(arg);
    }
  }
  if (audio) return choose();
  return std::nullopt;
}

std::optional<SdpVideo> parse_sdp_video(std::string_view sdp, std::string& why) {
  Bandwidth session_bandwidth;
  std::optional<MediaSection> media;  // the section being read; none before the first m=
  while (const auto line = next_line(sdp)) {
    const char type = line->type;
    const auto value = line->value;
    if (type == 'm') {
      if (media) {
        if (auto v = video_of(*media, session_bandwidth)) return v;
      }
      media.emplace();
      read_media_line(value, *media);
      continue;
    }
    if (type == 'b') {
      (media ? media->bandwidth : session_bandwidth).read(value);
      continue;
    }
    if (type != 'a' || !media || !media->video) continue;
    const auto [name, arg] = split_attribute(value);
    if (name == "rtpmap") {
      if (!read_rtpmap(arg, *media, why)) return std::nullopt;
    } else if (name == "fmtp") {
      read_fmtp(arg, media->fmtps);
    } else if (name == "control") {
      media->control = trim(arg);
    }
  }
  if (media) {
    if (auto v = video_of(*media, session_bandwidth)) return v;
  }
  why = "no H.264 or H.265 video in the SDP";
  return std::nullopt;
}

}  // namespace vigil::client::rtsp
