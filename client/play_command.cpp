#include "client/play_command.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
}

#include <chrono>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>

#include "common/time_arg.hpp"
#include "client/wire_client.hpp"

namespace vigil::client {
namespace {

constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2, kExitUnreachable = 3, kExitRefused = 4, kExitNotFound = 5;

constexpr const char* kUsage =
    "Usage: vigil [--server HOST:PORT] play --stream NAME --from TIME [--to TIME] [options] -o FILE|-\n"
    "       vigil [--server HOST:PORT] play --stream NAME --live [--duration S] -o FILE|-\n\n"
    "Plays a recorded range of a camera out of vigild and remuxes it, without re-encoding, to FILE\n"
    "(MP4, MKV or MPEG-TS by its extension) or to standard output for a player (MPEG-TS unless\n"
    "--format says otherwise): vigil play --stream cam1 --from -5m -o - | ffplay -\n"
    "Packets arrive paced at real time x RATE; the playback is admitted on the disk like any stream.\n\n"
    "  --stream NAME     camera/stream name\n"
    "  --from TIME       start (the playback begins at the keyframe at or before it)\n"
    "  --to TIME         end (default: now)\n"
    "                    TIME: now, -90s / -5m / -2h / -1d (before now), @UNIX_SECONDS,\n"
    "                    or 2026-11-23T21:00:00 (local time; append Z for UTC)\n"
    "  --rate R          delivery speed, 0 < R <= 64 (default 1): an export at --rate 8 takes 1/8 of\n"
    "                    the clip's length and is the same file\n"
    "  --keyframes       keyframes only (fast-forward: far less disk time per second of video);\n"
    "                    the output is re-timed to play at RATE\n"
    "  --reverse         backwards from --to to --from (keyframes only, re-timed to play at RATE)\n"
    "  --live            the camera as it records now (from its next keyframe) until it stops, or\n"
    "  --duration S      for S seconds\n"
    "  --format F        mp4, matroska, mpegts (default: from the file name)\n"
    "  -o FILE|-         where to write\n\n"
    "Exit: 0 the range was played, 1 failed, 2 usage, 3 server unreachable, 4 refused by admission\n"
    "(the reason and the largest rate that would fit are printed), 5 nothing recorded in the range.\n";

struct OutputCloser {
  void operator()(AVFormatContext* c) const {
    if (!c) return;
    if (c->pb && !(c->oformat->flags & AVFMT_NOFILE)) avio_closep(&c->pb);
    avformat_free_context(c);
  }
};

std::string av_error(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(err, buf, sizeof buf);
  return buf;
}

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The muxer for FILE, opened from the codec parameters the server sent.
std::unique_ptr<AVFormatContext, OutputCloser> open_output(const std::string& file, const std::string& format,
                                                           const proto::CodecParameters& codec) {
  const bool stdout_out = file == "-";
  std::string fmt = format;
  if (fmt.empty() && stdout_out) fmt = "mpegts";
  AVFormatContext* raw = nullptr;
  int err = avformat_alloc_output_context2(&raw, nullptr, fmt.empty() ? nullptr : fmt.c_str(),
                                           stdout_out ? nullptr : file.c_str());
  if (err < 0 || !raw) {
    throw std::runtime_error("cannot choose an output format for '" + file + "' (use --format mp4|matroska|mpegts): " +
                             av_error(err));
  }
  std::unique_ptr<AVFormatContext, OutputCloser> oc(raw);
  const AVCodecDescriptor* desc = avcodec_descriptor_get_by_name(codec.codec_name().c_str());
  if (!desc) throw std::runtime_error("the server sent an unknown codec '" + codec.codec_name() + "'");
  AVStream* st = avformat_new_stream(oc.get(), nullptr);
  if (!st) throw std::runtime_error("out of memory");
  st->time_base = AVRational{1, 1'000'000};
  auto* par = st->codecpar;
  par->codec_type = desc->type;
  par->codec_id = desc->id;
  par->width = codec.width();
  par->height = codec.height();
  par->bit_rate = codec.bit_rate();
  if (!codec.extradata().empty()) {
    par->extradata = static_cast<std::uint8_t*>(av_mallocz(codec.extradata().size() + AV_INPUT_BUFFER_PADDING_SIZE));
    if (!par->extradata) throw std::runtime_error("out of memory");
    std::memcpy(par->extradata, codec.extradata().data(), codec.extradata().size());
    par->extradata_size = static_cast<int>(codec.extradata().size());
  }
  if (!(oc->oformat->flags & AVFMT_NOFILE)) {
    err = avio_open(&oc->pb, stdout_out ? "pipe:1" : file.c_str(), AVIO_FLAG_WRITE);
    if (err < 0) throw std::runtime_error("cannot open '" + file + "' for writing: " + av_error(err));
  }
  AVDictionary* opts = nullptr;
  const std::string name = oc->oformat->name;
  if (name == "mp4" || name == "mov") {
    // A file gets its index first (playable while it downloads); a pipe cannot seek back, so it
    // gets fragments.
    av_dict_set(&opts, "movflags", stdout_out ? "frag_keyframe+empty_moov" : "+faststart", 0);
  }
  err = avformat_write_header(oc.get(), &opts);
  av_dict_free(&opts);
  if (err < 0) throw std::runtime_error("cannot write the output header: " + av_error(err));
  return oc;
}

}  // namespace

int play_main(const std::string& server, const std::string& token, const std::vector<std::string>& args) {
  std::string name, from_text, to_text = "now", output, format;
  double rate = 1.0, duration_s = 0;
  bool keyframes = false, reverse = false, live = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    auto value = [&]() -> std::string { return i + 1 < args.size() ? args[++i] : std::string(); };
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return kExitOk;
    } else if (a == "--stream") name = value();
    else if (a == "--from") from_text = value();
    else if (a == "--to") to_text = value();
    else if (a == "--rate") rate = std::atof(value().c_str());
    else if (a == "--keyframes") keyframes = true;
    else if (a == "--reverse") reverse = true;
    else if (a == "--format") format = value();
    else if (a == "--live") live = true;
    else if (a == "--duration") duration_s = std::atof(value().c_str());
    else if (a == "-o") output = value();
    else {
      std::cerr << "vigil play: unknown argument " << a << "\n" << kUsage;
      return kExitUsage;
    }
  }
  if (live) {
    if (!from_text.empty() || keyframes || reverse || rate != 1.0) {
      std::cerr << "vigil play: --live plays forward at rate 1 from now: no --from, --keyframes, --reverse or --rate\n";
      return kExitUsage;
    }
    from_text = "now";
    to_text = "now";
  }
  if (name.empty() || from_text.empty() || output.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  if (!(rate > 0 && rate <= 64)) {
    std::cerr << "vigil play: --rate must be in (0, 64]\n";
    return kExitUsage;
  }
  std::int64_t from_us = 0, to_us = 0;
  try {
    const auto now = now_us();
    from_us = parse_time_arg(from_text, now);
    to_us = parse_time_arg(to_text, now);
  } catch (const std::invalid_argument& e) {
    std::cerr << "vigil play: " << e.what() << "\n";
    return kExitUsage;
  }
  if (!live && to_us <= from_us) {
    std::cerr << "vigil play: --to must be after --from\n";
    return kExitUsage;
  }

  std::unique_ptr<WireClient> client;
  try {
    client = std::make_unique<WireClient>(server, std::chrono::seconds(30));
    client->hello("vigil-play", token);
  } catch (const std::exception& e) {
    std::cerr << "vigil play: cannot reach vigild at " << server << ": " << e.what() << "\n";
    return kExitUnreachable;
  }

  proto::Envelope open;
  auto* op = open.mutable_open_playback();
  op->set_stream_name(name);
  op->set_start_us(from_us);
  op->set_end_us(to_us);
  op->set_rate(rate);
  op->set_keyframes_only(keyframes || reverse);
  op->set_direction(reverse ? proto::DIRECTION_REVERSE : proto::DIRECTION_FORWARD);
  op->set_live(live);
  client->send(open);
  auto first = client->receive();
  if (first.msg.has_refuse()) {
    const auto& r = first.msg.refuse();
    std::cerr << "vigil play: refused: " << r.reason() << "\n";
    if (r.reason_code() == proto::REFUSE_REASON_NO_SUCH_STREAM) return kExitNotFound;
    if (r.reason_code() == proto::REFUSE_REASON_INVALID_REQUEST) return kExitUsage;
    if (r.largest_rate_bps() > 0) {
      std::cerr << "vigil play: the largest playback rate that fits now is " << r.largest_rate_bps() / 1e6
                << " Mbit/s\n";
    }
    return kExitRefused;
  }
  if (!first.msg.has_playback_started()) {
    std::cerr << "vigil play: unexpected answer from the server\n";
    return kExitFailure;
  }
  const auto& started = first.msg.playback_started();

  std::unique_ptr<AVFormatContext, OutputCloser> oc;
  try {
    oc = open_output(output, format, started.codec());
  } catch (const std::exception& e) {
    std::cerr << "vigil play: " << e.what() << "\n";
    return kExitFailure;
  }
  AVStream* st = oc->streams[0];
  std::unique_ptr<AVPacket, void (*)(AVPacket*)> pkt(av_packet_alloc(), [](AVPacket* p) { av_packet_free(&p); });
  // Output time: the media distance from the first packet. A full-frame playback keeps it (the
  // file is the recorded clip, however fast it was delivered); a trick-play rendition
  // (keyframes-only, reverse) is re-timed at 1/RATE, so it plays as the viewer saw it.
  const bool trick = keyframes || reverse;
  const double time_scale = trick ? rate : 1.0;
  std::optional<std::int64_t> base;
  std::int64_t last_dts = std::numeric_limits<std::int64_t>::min();
  std::uint64_t packets = 0, keyframes_seen = 0, bytes = 0;
  const auto started_at = std::chrono::steady_clock::now();
  int exit_code = kExitOk;
  for (;;) {
    Received msg;
    try {
      msg = client->receive();
    } catch (const ServerError& e) {
      std::cerr << "vigil play: server error: " << e.what() << "\n";
      exit_code = kExitFailure;
      break;
    }
    if (msg.msg.has_playback_end()) {
      const auto& end = msg.msg.playback_end();
      for (const auto& g : end.gaps()) {
        std::cerr << "vigil play: gap of " << (g.to_us() - g.from_us()) / 1e6 << " s: " << g.reason() << "\n";
      }
      if (end.failed()) {
        std::cerr << "vigil play: playback failed: " << end.reason() << "\n";
        exit_code = kExitFailure;
      }
      break;
    }
    if (msg.msg.has_playback_started()) continue;  // after a seek or rate change
    if (!msg.msg.has_media_packet()) continue;
    const auto& m = msg.msg.media_packet();
    const std::int64_t pts = m.has_pts() ? m.pts() : (m.has_dts() ? m.dts() : 0);
    const std::int64_t dts = m.has_dts() ? m.dts() : pts;
    if (!base) base = reverse ? pts : std::min(pts, dts);
    auto out_time = [&](std::int64_t t) {
      const double d = reverse ? static_cast<double>(*base - t) : static_cast<double>(t - *base);
      return static_cast<std::int64_t>(d / time_scale);
    };
    av_packet_unref(pkt.get());
    if (av_new_packet(pkt.get(), static_cast<int>(msg.payload.size())) < 0) {
      std::cerr << "vigil play: out of memory\n";
      exit_code = kExitFailure;
      break;
    }
    std::memcpy(pkt->data, msg.payload.data(), msg.payload.size());
    pkt->stream_index = 0;
    pkt->pts = out_time(pts);
    pkt->dts = (keyframes || reverse) ? pkt->pts : out_time(dts);
    if (pkt->dts <= last_dts) pkt->dts = last_dts + 1;  // muxers need strictly rising dts
    if (pkt->pts < pkt->dts) pkt->pts = pkt->dts;
    last_dts = pkt->dts;
    pkt->duration = static_cast<std::int64_t>(static_cast<double>(m.duration()) / time_scale);
    if (m.keyframe()) pkt->flags |= AV_PKT_FLAG_KEY;
    av_packet_rescale_ts(pkt.get(), AVRational{1, 1'000'000}, st->time_base);
    if (int err = av_write_frame(oc.get(), pkt.get()); err < 0) {
      std::cerr << "vigil play: writing the output failed: " << av_error(err) << "\n";
      exit_code = kExitFailure;
      break;
    }
    ++packets;
    bytes += msg.payload.size();
    if (m.keyframe()) ++keyframes_seen;
    if (duration_s > 0 && static_cast<double>(pts - *base) >= duration_s * 1e6) break;
  }
  if (int err = av_write_trailer(oc.get()); err < 0 && exit_code == kExitOk) {
    std::cerr << "vigil play: finishing the output failed: " << av_error(err) << "\n";
    exit_code = kExitFailure;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_at).count();
  std::cerr << "vigil play: " << packets << " packets (" << keyframes_seen << " keyframes, " << bytes / 1e6
            << " MB) in " << secs << " s" << (output == "-" ? "" : " -> " + output) << "\n";
  if (packets == 0 && exit_code == kExitOk) {
    std::cerr << "vigil play: nothing was played\n";
    return kExitNotFound;
  }
  return exit_code;
}

}  // namespace vigil::client
