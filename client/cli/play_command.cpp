#include "client/cli/play_command.hpp"

#include <chrono>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>

#include "common/media_writer.hpp"
#include "common/time_arg.hpp"
#include "client/wire/wire_client.hpp"

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

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

media::CodecInfo codec_info(const proto::CodecParameters& c) {
  return {.codec_name = c.codec_name(), .width = c.width(), .height = c.height(), .bit_rate = c.bit_rate(),
          .extradata = c.extradata()};
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

  std::optional<media::MediaWriter> out;
  try {
    out.emplace(media::MediaWriter::to_file(output, format, codec_info(started.codec())));
  } catch (const std::exception& e) {
    std::cerr << "vigil play: " << e.what() << "\n";
    return kExitFailure;
  }
  // Output time: the media distance from the first packet. A full-frame playback keeps it (the
  // file is the recorded clip, however fast it was delivered); a trick-play rendition
  // (keyframes-only, reverse) is re-timed at 1/RATE, so it plays as the viewer saw it.
  const bool trick = keyframes || reverse;
  const double time_scale = trick ? rate : 1.0;
  std::optional<std::int64_t> base;
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
    try {
      out->write({.pts_us = out_time(pts),
                  .dts_us = trick ? out_time(pts) : out_time(dts),
                  .duration_us = static_cast<std::int64_t>(static_cast<double>(m.duration()) / time_scale),
                  .keyframe = m.keyframe(),
                  .payload = msg.payload});
    } catch (const std::exception& e) {
      std::cerr << "vigil play: " << e.what() << "\n";
      exit_code = kExitFailure;
      break;
    }
    ++packets;
    bytes += msg.payload.size();
    if (m.keyframe()) ++keyframes_seen;
    if (duration_s > 0 && static_cast<double>(pts - *base) >= duration_s * 1e6) break;
  }
  try {
    out->finish();
  } catch (const std::exception& e) {
    if (exit_code == kExitOk) {
      std::cerr << "vigil play: " << e.what() << "\n";
      exit_code = kExitFailure;
    }
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
