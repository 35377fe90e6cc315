#include "bench/replay.hpp"

#include <cstdlib>

extern "C" {
#include <libavformat/avformat.h>
}
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "admission/profiler.hpp"
#include "bench/bench_vigild.hpp"
#include "client/wire/unacked_window.hpp"
#include "client/wire/wire_client.hpp"
#include "storage/file_device.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace vigil::bench {

ReplayClip make_replay_clip(const fs::path& dir, double rate_bps, const std::string& size) {
  const fs::path file = dir / "clip.mp4";
  const auto kbps = std::to_string(static_cast<long>(rate_bps / 1000)) + "k";
  const int pid = spawn_logged({"ffmpeg",   "-loglevel", "error",      "-y",
                                "-f",       "lavfi",     "-i",         "testsrc2=size=" + size + ":rate=25",
                                "-t",       "10",        "-c:v",       "libx264",
                                "-preset",  "ultrafast", "-b:v",       kbps,
                                "-maxrate", kbps,        "-bufsize",   kbps,
                                "-g",       "25",        "-bf",        "0",
                                "-pix_fmt", "yuv420p",   file.string()},
                               dir / "ffmpeg.log");
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("ffmpeg failed (see ffmpeg.log)");
  AVFormatContext* fmt = nullptr;
  if (avformat_open_input(&fmt, file.c_str(), nullptr, nullptr) < 0) throw std::runtime_error("cannot open the clip");
  avformat_find_stream_info(fmt, nullptr);
  ReplayClip c;
  const int v = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  c.tb_num = fmt->streams[v]->time_base.num;
  c.tb_den = fmt->streams[v]->time_base.den;
  const AVCodecParameters* par = fmt->streams[v]->codecpar;
  c.width = par->width;
  c.height = par->height;
  if (par->extradata)
    c.extradata.assign(reinterpret_cast<const char*>(par->extradata), static_cast<std::size_t>(par->extradata_size));
  AVPacket* p = av_packet_alloc();
  while (av_read_frame(fmt, p) >= 0) {
    if (p->stream_index == v) {
      ReplayPacket k{p->pts, p->dts, p->duration, (p->flags & AV_PKT_FLAG_KEY) != 0,
                     std::vector<std::byte>(reinterpret_cast<std::byte*>(p->data),
                                            reinterpret_cast<std::byte*>(p->data) + p->size)};
      c.bytes += p->size;
      c.packets.push_back(std::move(k));
    }
    av_packet_unref(p);
  }
  av_packet_free(&p);
  avformat_close_input(&fmt);
  c.seconds = static_cast<double>(c.packets.size()) / 25.0;
  return c;
}

ReplayResult replay(const std::string& wire, const std::string& name, const ReplayClip& clip,
                    const ReplayOptions& options) {
  ReplayResult r;
  bool told = false;
  auto tell = [&](bool admitted) {
    if (!told && options.on_open) options.on_open(admitted);
    told = true;
  };
  try {
    client::WireClient c(wire, 30s);
    const char* token = std::getenv("VIGIL_TOKEN");  // set by BenchVigild from DATA/admin.token
    c.hello("vigil bench", token ? token : "");
    proto::Envelope open;
    auto* o = open.mutable_open_record();
    o->set_stream_name(name);
    o->mutable_codec()->set_codec_name("h264");
    o->mutable_codec()->set_time_base_num(clip.tb_num);
    o->mutable_codec()->set_time_base_den(clip.tb_den);
    o->mutable_codec()->set_codec_id(AV_CODEC_ID_H264);
    o->mutable_codec()->set_width(clip.width);
    o->mutable_codec()->set_height(clip.height);
    o->mutable_codec()->set_extradata(clip.extradata);
    o->set_declared_average_rate_bps(static_cast<std::uint64_t>(options.declared_bps));
    o->set_declared_peak_rate_bps(static_cast<std::uint64_t>(options.declared_bps));
    if (options.first_wall_us) o->set_first_wall_us(options.first_wall_us);
    c.send(open);
    auto reply = c.receive();
    if (!reply.msg.has_admit()) {
      r.error = reply.msg.has_refuse() ? reply.msg.refuse().reason() : "no admit";
      if (reply.msg.has_refuse()) r.largest_rate_bps = reply.msg.refuse().largest_rate_bps();
      tell(false);
      return r;
    }
    r.admitted = true;
    r.buffer_bytes = reply.msg.admit().buffer_bytes();
    tell(true);
    // As `vigil record` does: a packet stays in the window until a durable acknowledgement covers
    // it, and a policed packet is sent again, so a replay thread the CPU stalled (it then sends its
    // backlog at once, over the cycle's half) still records everything.
    client::UnackedWindow window;
    window.renumber(reply.msg.admit().stream_id());
    const auto t0 = std::chrono::steady_clock::now();
    const std::size_t total = static_cast<std::size_t>(options.seconds * 25);
    const double tick_us = 40'000 / options.speed;  // wall time per packet
    // When each distinct packet was first written (index = packet), for on_ack: 8 bytes a packet.
    std::vector<std::chrono::steady_clock::time_point> first_sent;
    auto take = [&](const client::Received& m) {
      if (!m.msg.has_durable_ack()) return;
      window.acknowledge(m.msg.durable_ack().last_sequence());
      const bool more = window.acked_total() > r.acked;
      r.acked = window.acked_total();
      if (more && options.on_ack && r.acked <= first_sent.size()) options.on_ack(r.acked, first_sent[r.acked - 1]);
    };
    // What vigild has said, without waiting or (BARRIER) up to the pong of a ping sent now: every
    // refusal of what was sent comes before it. Returns the first packet policed (0: none).
    auto take_replies = [&](bool barrier) {
      std::uint64_t first_refused = 0;
      if (barrier) {
        proto::Envelope ping;
        ping.mutable_ping()->set_nonce(window.last_sent());
        c.send(ping);
      }
      for (;;) {
        try {
          auto m = barrier ? std::optional<client::Received>(c.receive()) : c.try_receive();
          if (!m) break;
          take(*m);
          if (barrier && m->msg.has_pong()) break;
        } catch (const client::ServerError& e) {
          // rate_exceeded for the first; what followed it is out of order until it is sent again.
          if (e.code != proto::ERROR_CODE_RATE_EXCEEDED && e.code != proto::ERROR_CODE_INVALID_ARGUMENT) throw;
          if (e.code == proto::ERROR_CODE_RATE_EXCEEDED) ++r.refused;
          if (first_refused == 0 || e.related_sequence < first_refused) first_refused = e.related_sequence;
        }
      }
      return first_refused;
    };
    std::size_t i = 0;
    std::uint64_t early_refused = 0;  // a refusal read while waiting for a burst's time
    auto more_media = [&] { return i < total && !options.stop.stop_requested(); };
    while (more_media() || !window.all_sent()) {
      if (more_media()) {
        // 100 ms of media (2-3 packets) per burst, sent at its time.
        const auto due = t0 + std::chrono::microseconds(static_cast<std::int64_t>(tick_us * static_cast<double>(i)));
        if (options.on_ack) {
          // Acknowledgements taken the moment they arrive (`vigil bench freshness` times them).
          for (auto now = std::chrono::steady_clock::now(); now < due; now = std::chrono::steady_clock::now()) {
            pollfd fd{.fd = c.native_handle(), .events = POLLIN, .revents = 0};
            const auto wait_ms = std::chrono::ceil<std::chrono::milliseconds>(due - now).count();
            if (::poll(&fd, 1, static_cast<int>(wait_ms)) > 0) {
              const auto refused = take_replies(false);
              if (refused && (!early_refused || refused < early_refused)) early_refused = refused;
            }
          }
        }
        std::this_thread::sleep_until(due);
        for (const std::size_t end = std::min(total, i + 3); i < end; ++i) {
          const auto& p = clip.packets[i % clip.packets.size()];
          client::PendingPacket pending{.env = {}, .payload = p.data};
          auto* m = pending.env.mutable_media_packet();
          m->set_pts(static_cast<std::int64_t>(i) * clip.tb_den / clip.tb_num / 25);
          m->set_has_pts(true);
          m->set_duration(clip.tb_den / clip.tb_num / 25);
          m->set_keyframe(p.key);
          m->set_payload_bytes(static_cast<std::uint32_t>(p.data.size()));
          window.push(std::move(pending));
          ++r.sent;
        }
      }
      for (const auto* p : window.unsent()) c.queue(p->env, p->payload);
      window.mark_sent();
      c.flush();  // as `vigil record` sends: the burst in one write, then what has arrived
      if (options.on_ack) first_sent.resize(r.sent, std::chrono::steady_clock::now());
      std::uint64_t first_refused = take_replies(false);
      if (early_refused && (!first_refused || early_refused < first_refused)) first_refused = early_refused;
      early_refused = 0;
      if (first_refused || !more_media()) {
        const auto more_refused = take_replies(true);
        if (more_refused && (!first_refused || more_refused < first_refused)) first_refused = more_refused;
      }
      if (first_refused) {
        // The cycle's half was full: once everything before the refused packet is durable that
        // half has been written and a fresh one fills. Bounded by progress: each receive fails
        // after the client's timeout without a frame.
        while (window.acked() + 1 < first_refused) take(c.receive());
        window.resend_from(first_refused);
      }
    }
    ::shutdown(c.native_handle(), SHUT_WR);
    // Until vigild closes the session after its final acknowledgement. Anything else that ends
    // the wait (the client's receive timeout, a reset) is said: a shortfall of acknowledgements in
    // the report always comes with its reason.
    try {
      for (;;) take(c.receive());
    } catch (const std::exception& e) {
      if (r.acked < r.sent) r.error = std::string("ended before the final acknowledgement: ") + e.what();
    }
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  tell(false);
  return r;
}

fs::path profile_disk_of(const fs::path& dir) {
  const fs::path scratch = dir / "scratch.dat";
  {
    auto dev = storage::FileDevice::open(scratch, {.create_bytes = 256ull << 20});
    if (!dev) throw std::runtime_error("cannot create " + scratch.string());
    storage::SteadyClock clock;
    auto prof = admission::profile_device(**dev, clock, {.quick = true, .prefill = true});
    prof.device = scratch.string();
    std::ofstream(dir / "profile.json") << boost::json::serialize(admission::to_json(prof));
  }
  fs::remove(scratch);
  return dir / "profile.json";
}

fs::path profile_for(const std::string& disk, const fs::path& given, const fs::path& dir) {
  if (!given.empty()) {
    if (!fs::exists(given)) throw std::invalid_argument("no profile " + given.string());
    return fs::absolute(given);
  }
  if (disk == "this") return profile_disk_of(dir);
  const fs::path out = dir / "profile.json";
  const int pid =
      spawn_logged({fs::read_symlink("/proc/self/exe").string(), "profile", disk, "--quick", "-o", out.string()},
                   dir / "profile.log");
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("vigil profile " + disk + " failed");
  return out;
}

std::size_t count_lines(const fs::path& log, const std::string& needle) {
  std::ifstream in(log);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

std::string last_field(const fs::path& log, const std::string& needle, const std::string& field) {
  std::ifstream in(log);
  std::string last;
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos) last = line;
  }
  const auto at = last.find(" " + field + "=");
  if (at == std::string::npos) return "";
  const auto from = at + field.size() + 2;
  return last.substr(from, last.find(' ', from) - from);
}

}  // namespace vigil::bench
