#include "client/cli/play_command.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>

#include "client/cli/audio_feed.hpp"
#include "common/command_line.hpp"
#include "common/exit_codes.hpp"
#include "common/media_writer.hpp"
#include "common/time_arg.hpp"
#include "client/wire/wire_client.hpp"

namespace po = boost::program_options;

namespace vigil::client {
namespace {

constexpr CommandHelp kHelp{
    "vigil play",
    "Usage: vigil [--server HOST:PORT] play --stream NAME --from TIME [--to TIME] [options] -o FILE|-\n"
    "       vigil [--server HOST:PORT] play --stream NAME --live [--duration S] -o FILE|-\n"
    "       (--substream: the camera's sub stream, in either form)\n\n"
    "Plays a recorded range of a camera out of vigild and remuxes it, without re-encoding, to FILE\n"
    "(MP4, MKV or MPEG-TS by its extension) or to standard output for a player (MPEG-TS unless\n"
    "--format says otherwise): vigil play --stream cam1 --from -5m -o - | ffplay -\n"
    "Packets arrive paced at real time x RATE; the playback is admitted on the disk like any stream.\n"
    "TIME: now, -90s / -5m / -2h / -1d (before now), @UNIX_SECONDS, or 2026-11-23T21:00:00 (local\n"
    "time; append Z for UTC).\n"
    "A range recorded across volumes or reconnects plays on into one file. Where the codec parameters\n"
    "change (e.g. the camera's resolution), the rest goes to FILE.part2.EXT, FILE.part3.EXT, ... (to\n"
    "standard output: it stops there and says where the next part begins).\n"
    "--audio adds the camera's audio (recorded beside its video) as a second track, as recorded: AAC and\n"
    "Opus go into MP4, MKV and MPEG-TS; G.711 into MKV (or .mov) only.\n",
    "\nExit: 0 the range was played, 1 failed, 2 usage, 3 server unreachable, 4 refused by admission\n"
    "(the reason and the largest rate that would fit are printed), 5 nothing recorded in the range.\n"};

struct PlayArgs {
  std::string name, from_text, to_text = "now", output, format;
  double rate = 1.0, duration_s = 0;
  bool keyframes = false, reverse = false, live = false, audio = false;
  bool substream = false;  // the camera's sub (low-resolution) stream instead of its main one
};

po::options_description play_options(PlayArgs& a) {
  po::options_description o("Options");
  o.add_options()                                                               //
      ("stream", po::value(&a.name)->value_name("NAME"), "camera/stream name")  //
      ("from", po::value(&a.from_text)->value_name("TIME"),
       "start (the playback begins at the keyframe at or before it)")  //
      ("to", po::value(&a.to_text)->value_name("TIME"),
       "end (default: now). A range that reaches what the camera is recording now plays every frame up to its "
       "end, continuing at the live edge; 'live': go on live until the recording stops or --duration")  //
      ("rate", po::value(&a.rate)->value_name("R"),
       "delivery speed, 0 < R <= 64 (default 1): an export at --rate 8 takes 1/8 of the clip's length and is "
       "the same file")  //
      ("keyframes", po::bool_switch(&a.keyframes),
       "keyframes only (fast-forward: far less disk time per second of video); the output is re-timed to play "
       "at RATE")  //
      ("reverse", po::bool_switch(&a.reverse),
       "backwards from --to to --from (keyframes only, re-timed to play at RATE)")                                    //
      ("live", po::bool_switch(&a.live), "the camera as it records now (from its next keyframe) until it stops, or")  //
      ("substream", po::bool_switch(&a.substream),
       "the camera's sub stream (its low-resolution encoding, recorded from its substream URL) instead of its main "
       "one")                                                                   //
      ("duration", po::value(&a.duration_s)->value_name("S"), "for S seconds")  //
      ("audio", po::bool_switch(&a.audio),
       "also the camera's audio, as a second track (not with --live, --keyframes or --reverse)")                //
      ("format", po::value(&a.format)->value_name("F"), "mp4, matroska, mpegts (default: from the file name)")  //
      (",o", po::value(&a.output)->value_name("FILE|-"), "where to write");
  return o;
}

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

media::CodecInfo codec_info(const proto::CodecParameters& c) {
  return {.codec_name = c.codec_name(),
          .width = c.width(),
          .height = c.height(),
          .bit_rate = c.bit_rate(),
          .extradata = c.extradata()};
}

bool same_codec(const proto::CodecParameters& a, const proto::CodecParameters& b) {
  return a.codec_name() == b.codec_name() && a.width() == b.width() && a.height() == b.height() &&
         a.extradata() == b.extradata();
}

// "@SECONDS.MICROS", as --from takes it.
std::string at_arg(std::int64_t us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "@%lld.%06lld", static_cast<long long>(us / 1'000'000),
                static_cast<long long>(us % 1'000'000));
  return buf;
}

// OUTPUT's name for part N (from 2): clip.mp4 -> clip.part2.mp4.
std::string part_file(const std::string& output, int n) {
  const auto dot = output.rfind('.');
  const auto slash = output.rfind('/');
  const bool has_ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  const std::string stem = has_ext ? output.substr(0, dot) : output;
  return stem + ".part" + std::to_string(n) + (has_ext ? output.substr(dot) : std::string());
}

}  // namespace

int play_main(const std::string& server, const std::string& token, const std::vector<std::string>& args) {
  PlayArgs a;
  if (auto rc = parse_command_line(args, play_options(a), kHelp)) return *rc;
  auto& [name, from_text, to_text, output, format, rate, duration_s, keyframes, reverse, live, with_audio, substream] =
      a;
  if (with_audio && (live || keyframes || reverse)) {
    return usage_error(kHelp, "--audio plays beside every frame: not with --live, --keyframes or --reverse");
  }
  if (live) {
    if (!from_text.empty() || keyframes || reverse || rate != 1.0) {
      return usage_error(kHelp, "--live plays forward at rate 1 from now: no --from, --keyframes, --reverse or --rate");
    }
    from_text = "now";
    to_text = "now";
  }
  if (name.empty()) return usage_error(kHelp, "--stream is required");
  if (from_text.empty()) return usage_error(kHelp, "--from (or --live) is required");
  if (output.empty()) return usage_error(kHelp, "-o FILE|- is required");
  if (!(rate > 0 && rate <= 64)) return usage_error(kHelp, "--rate must be in (0, 64]");
  if (duration_s < 0) return usage_error(kHelp, "--duration must not be negative");
  std::int64_t from_us = 0, to_us = 0;
  try {
    const auto now = now_us();
    from_us = parse_time_arg(from_text, now);
    // --to live: no end; the playback follows the recording at its live edge.
    to_us = !live && to_text == "live" ? std::numeric_limits<std::int64_t>::max() / 2 : parse_time_arg(to_text, now);
  } catch (const std::invalid_argument& e) {
    return usage_error(kHelp, e.what());
  }
  if (!live && to_us <= from_us) return usage_error(kHelp, "--to must be after --from");

  std::unique_ptr<WireClient> client;
  try {
    client = std::make_unique<WireClient>(server, std::chrono::seconds(30));
    client->hello("vigil-play", token);
  } catch (const std::exception& e) {
    std::cerr << "vigil play: cannot reach vigild at " << server << ": " << e.what() << "\n";
    return exit_code::kUnreachable;
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
  if (substream) op->set_role("sub");
  client->send(open);
  auto first = client->receive();
  if (first.msg.has_refuse()) {
    const auto& r = first.msg.refuse();
    std::cerr << "vigil play: refused: " << r.reason() << "\n";
    if (r.reason_code() == proto::REFUSE_REASON_NO_SUCH_STREAM) return exit_code::kNothing;
    if (r.reason_code() == proto::REFUSE_REASON_INVALID_REQUEST) return exit_code::kUsage;
    if (r.largest_rate_bps() > 0) {
      std::cerr << "vigil play: the largest playback rate that fits now is " << r.largest_rate_bps() / 1e6
                << " Mbit/s\n";
    }
    return exit_code::kRefused;
  }
  if (!first.msg.has_playback_started()) {
    std::cerr << "vigil play: unexpected answer from the server\n";
    return exit_code::kFailed;
  }
  proto::CodecParameters codec = first.msg.playback_started().codec();

  // The audio over its own connection (audio_feed.hpp), on the same range and rate.
  std::unique_ptr<AudioFeed> audio;
  if (with_audio) {
    audio = AudioFeed::open(server, token, open.open_playback(), std::cerr);
    if (audio) std::cerr << "vigil play: with its audio (" << audio->codec().codec_name << ")\n";
  }
  const media::CodecInfo* audio_codec = audio ? &audio->codec() : nullptr;
  std::optional<media::MediaWriter> out;
  std::string out_file = output;
  try {
    out.emplace(media::MediaWriter::to_file(out_file, format, codec_info(codec), audio_codec));
  } catch (const std::exception& e) {
    std::cerr << "vigil play: " << e.what() << "\n";
    return exit_code::kFailed;
  }
  int part = 1;
  // Output time: the media distance from the first packet. A full-frame playback keeps it (the
  // file is the recorded clip, however fast it was delivered); a trick-play rendition
  // (keyframes-only, reverse) is re-timed at 1/RATE, so it plays as the viewer saw it.
  const bool trick = keyframes || reverse;
  const double time_scale = trick ? rate : 1.0;
  // The current file's first packet time (a new part's file starts its own).
  std::int64_t base = 0;
  bool have_base = false;
  std::uint64_t packets = 0, keyframes_seen = 0, bytes = 0;
  const auto started_at = std::chrono::steady_clock::now();
  int exit_code = exit_code::kOk;
  for (;;) {
    Received msg;
    try {
      msg = client->receive();
    } catch (const ServerError& e) {
      std::cerr << "vigil play: server error: " << e.what() << "\n";
      exit_code = exit_code::kFailed;
      break;
    }
    if (msg.msg.has_playback_end()) {
      const auto& end = msg.msg.playback_end();
      for (const auto& g : end.gaps()) {
        std::cerr << "vigil play: gap of " << (g.to_us() - g.from_us()) / 1e6 << " s: " << g.reason() << "\n";
      }
      if (end.failed()) {
        std::cerr << "vigil play: playback failed: " << end.reason() << "\n";
        exit_code = exit_code::kFailed;
        break;
      }
      if (end.next_start_us() == 0 || live || reverse) break;
      if (end.next_start_us() <= open.open_playback().start_us()) {
        std::cerr << "vigil play: the server named " << at_arg(end.next_start_us())
                  << " as the next part, which does not go forward\n";
        exit_code = exit_code::kFailed;
        break;
      }
      // The range goes on in another part (another volume, or other codec parameters): open it
      // on the same connection.
      open.mutable_open_playback()->set_start_us(end.next_start_us());
      client->send(open);
      auto next = client->receive();
      if (!next.msg.has_playback_started()) {
        std::cerr << "vigil play: the range continues at " << at_arg(end.next_start_us())
                  << ", but the server did not play it: "
                  << (next.msg.has_refuse() ? next.msg.refuse().reason() : std::string("unexpected answer")) << "\n";
        exit_code = exit_code::kFailed;
        break;
      }
      if (same_codec(codec, next.msg.playback_started().codec())) continue;  // one file on
      // Other codec parameters cannot go on in this file: the next part gets its own.
      codec = next.msg.playback_started().codec();
      try {
        // This part's audio up to the next part's start, not only to its last video frame: the
        // next part's file starts there, so what lies between would be in neither.
        if (audio && have_base) {
          audio->write_until(end.next_start_us() - 1, base, *out, [&](std::int64_t t) { return t - base; });
        }
        out->finish();
        std::cerr << "vigil play: part " << part << " -> " << out_file << "\n";
        if (output == "-") {
          std::cerr << "vigil play: the codec parameters change at " << at_arg(end.next_start_us())
                    << ": standard output holds one part; play the rest with --from " << at_arg(end.next_start_us())
                    << "\n";
          exit_code = exit_code::kFailed;
          out.reset();
          break;
        }
        out_file = part_file(output, ++part);
        out.emplace(media::MediaWriter::to_file(out_file, format, codec_info(codec), audio_codec));
      } catch (const std::exception& e) {
        std::cerr << "vigil play: " << e.what() << "\n";
        exit_code = exit_code::kFailed;
        out.reset();
        break;
      }
      have_base = false;  // the new file's media time starts at its first packet
      continue;
    }
    if (msg.msg.has_playback_started()) continue;  // after a seek or rate change
    if (!msg.msg.has_media_packet()) continue;
    const auto& m = msg.msg.media_packet();
    const std::int64_t pts = m.has_pts() ? m.pts() : (m.has_dts() ? m.dts() : 0);
    const std::int64_t dts = m.has_dts() ? m.dts() : pts;
    if (!have_base) {
      base = reverse ? pts : std::min(pts, dts);
      // Audio recorded in the range before the first video packet (an AAC file's priming frame)
      // starts the file: the clip holds all the sound of its range (audio_feed.hpp).
      if (audio) {
        const auto range_start_us = std::min(base, open.open_playback().start_us());
        if (const auto first_audio_us = audio->first_pts_from(range_start_us)) base = std::min(base, *first_audio_us);
      }
      have_base = true;
    }
    auto out_time = [&, reverse = reverse](std::int64_t t) {  // clang 14 cannot capture a binding
      const double d = reverse ? static_cast<double>(base - t) : static_cast<double>(t - base);
      return static_cast<std::int64_t>(d / time_scale);
    };
    try {
      if (audio) audio->write_until(dts, base, *out, out_time);  // interleaved by time
      out->write({.pts_us = out_time(pts),
                  .dts_us = trick ? out_time(pts) : out_time(dts),
                  .duration_us = static_cast<std::int64_t>(static_cast<double>(m.duration()) / time_scale),
                  .keyframe = m.keyframe(),
                  .payload = msg.payload});
    } catch (const std::exception& e) {
      std::cerr << "vigil play: " << e.what() << "\n";
      exit_code = exit_code::kFailed;
      break;
    }
    ++packets;
    bytes += msg.payload.size();
    if (m.keyframe()) ++keyframes_seen;
    if (duration_s > 0 && static_cast<double>(pts - base) >= duration_s * 1e6) break;
  }
  try {
    // The rest of the audio up to the range's end (--to, or --duration), not only to the video's
    // last frame: the sound recorded after it is in the range too.
    if (out && audio && have_base && exit_code == exit_code::kOk) {
      std::int64_t audio_until_us = to_us;
      if (duration_s > 0) {
        audio_until_us = std::min(audio_until_us, base + static_cast<std::int64_t>(duration_s * 1e6));
      }
      audio->write_until(audio_until_us, base, *out, [&](std::int64_t t) { return t - base; });
    }
    if (out) out->finish();
  } catch (const std::exception& e) {
    if (exit_code == exit_code::kOk) {
      std::cerr << "vigil play: " << e.what() << "\n";
      exit_code = exit_code::kFailed;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_at).count();
  std::cerr << "vigil play: " << packets << " packets (" << keyframes_seen << " keyframes, " << bytes / 1e6
            << " MB) in " << secs << " s" << (output == "-" ? "" : " -> " + out_file)
            << (part > 1 ? " (part " + std::to_string(part) + ")" : std::string()) << "\n";
  if (audio) std::cerr << "vigil play: " << audio->packets() << " audio packets\n";
  if (packets == 0 && exit_code == exit_code::kOk) {
    std::cerr << "vigil play: nothing was played\n";
    return exit_code::kNothing;
  }
  return exit_code;
}

}  // namespace vigil::client
