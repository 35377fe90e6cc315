#include "client/cli/record_command.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
}
#include <signal.h>
#include <sys/socket.h>

#include <chrono>
#include <deque>
#include <iostream>
#include <memory>
#include <atomic>
#include <thread>

#include "client/wire/wire_client.hpp"
#include "common/rate.hpp"

namespace vigil::client {
namespace {

constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2, kExitUnreachable = 3, kExitRefused = 4;

constexpr const char* kUsage =
    "Usage: vigil [--server HOST:PORT] record --stream NAME INPUT [options]\n\n"
    "Records INPUT (anything FFmpeg opens: a file, an rtsp:// camera URL) into vigild without\n"
    "decoding: codec parameters and packets of its video stream go over the wire protocol, paced at\n"
    "real time. Packets are kept until vigild acknowledges them as durable; packets refused for\n"
    "exceeding the admitted rate are sent again after the next acknowledgement.\n\n"
    "  --stream NAME     camera/stream name (letters, digits, . _ -)\n"
    "  --rate MBPS       declared rate in Mbit/s (default: measured over the first 2 s of INPUT)\n"
    "  --duration S      stop after S seconds of media\n"
    "  --fast            do not pace at real time (files only; vigild still polices the rate)\n"
    "  --retry-for S     when vigild goes away, reconnect (backoff 1 s to 30 s) for up to S seconds and\n"
    "                    resend everything not acknowledged (default 300)\n"
    "  --gap-reason TEXT why this camera's previous recording ended (recorded as the gap's detail;\n"
    "                    the camera manager passes it when it restarts a pull)\n\n"
    "SIGINT/SIGTERM stop reading the input; what was read is still sent and acknowledged.\n"
    "rtsp:// inputs use TCP and give up after 10 s without data.\n\n"
    "Exit: 0 every packet acknowledged, 1 failed, 2 usage, 3 server unreachable, 4 refused by admission\n"
    "(the reason and the largest rate that would fit are printed).\n";

struct FormatCloser {
  void operator()(AVFormatContext* c) const { avformat_close_input(&c); }
};
struct PacketFree {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};

// Set by SIGINT/SIGTERM: stop reading the input, finish sending, exit.
std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) { g_stop.store(true); }
// libavformat polls this while it waits on the network: a stop is not held up by a silent camera.
int interrupt_cb(void*) { return g_stop.load() ? 1 : 0; }

struct Pending {
  proto::Envelope env;
  std::vector<std::byte> payload;
};

}  // namespace

int record_main(const std::string& server, const std::string& token, const std::vector<std::string>& args) {
  std::string name, input, gap_reason;
  double rate_mbps = 0, duration_s = 0, retry_for_s = 300;
  bool fast = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    auto value = [&]() -> std::string { return i + 1 < args.size() ? args[++i] : std::string(); };
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return kExitOk;
    } else if (a == "--stream") name = value();
    else if (a == "--rate") rate_mbps = std::atof(value().c_str());
    else if (a == "--duration") duration_s = std::atof(value().c_str());
    else if (a == "--fast") fast = true;
    else if (a == "--gap-reason") gap_reason = value();
    else if (a == "--retry-for") retry_for_s = std::atof(value().c_str());
    else if (!a.empty() && a[0] == '-') {
      std::cerr << "vigil record: unknown option " << a << "\n" << kUsage;
      return kExitUsage;
    } else if (input.empty()) input = a;
    else {
      std::cerr << "vigil record: one INPUT at a time\n";
      return kExitUsage;
    }
  }
  if (name.empty() || input.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }

  // Demux only: no decoder is ever opened.
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  AVFormatContext* raw = avformat_alloc_context();
  if (!raw) {
    std::cerr << "vigil record: out of memory\n";
    return kExitFailure;
  }
  raw->interrupt_callback = AVIOInterruptCB{interrupt_cb, nullptr};
  AVDictionary* opts = nullptr;
  if (input.rfind("rtsp://", 0) == 0) {
    av_dict_set(&opts, "rtsp_transport", "tcp", 0);
    av_dict_set(&opts, "timeout", "10000000", 0);  // socket IO timeout, microseconds: a vanished camera
  }
  const int open_rc = avformat_open_input(&raw, input.c_str(), nullptr, &opts);
  av_dict_free(&opts);
  if (open_rc < 0) {
    char err[256];
    av_strerror(open_rc, err, sizeof err);
    std::cerr << "vigil record: cannot open " << input << ": " << err << "\n";
    return kExitFailure;
  }
  std::unique_ptr<AVFormatContext, FormatCloser> fmt(raw);
  if (avformat_find_stream_info(fmt.get(), nullptr) < 0) {
    std::cerr << "vigil record: cannot read stream information from " << input << "\n";
    return kExitFailure;
  }
  const int vindex = av_find_best_stream(fmt.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (vindex < 0) {
    std::cerr << "vigil record: " << input << " has no video stream\n";
    return kExitFailure;
  }
  AVStream* vs = fmt->streams[vindex];
  const AVCodecParameters* par = vs->codecpar;

  // Read ahead: packets of the first 2 s measure the rate (when not declared) and are sent first.
  std::deque<std::unique_ptr<AVPacket, PacketFree>> ahead;
  double ahead_bytes = 0, ahead_span_s = 0;
  bool input_done = false, input_lost = false;
  const bool live_source = input.find("://") != std::string::npos && input.rfind("file://", 0) != 0;
  auto read_packet = [&]() -> std::unique_ptr<AVPacket, PacketFree> {
    for (;;) {
      std::unique_ptr<AVPacket, PacketFree> pkt(av_packet_alloc());
      if (g_stop.load()) {
        input_done = true;
        return nullptr;
      }
      if (const int rc = av_read_frame(fmt.get(), pkt.get()); rc < 0) {
        // The end of a live camera stream is a lost camera, not the end of a recording.
        if ((rc != AVERROR_EOF || live_source) && !g_stop.load()) {
          char err[256];
          av_strerror(rc, err, sizeof err);
          std::cerr << "vigil record: input lost: " << err << "\n";
          input_lost = true;
        }
        input_done = true;
        return nullptr;
      }
      if (pkt->stream_index == vindex) return pkt;
    }
  };
  const double tb = av_q2d(vs->time_base);
  std::int64_t first_ts = AV_NOPTS_VALUE;
  // When the first packet was read: with a live camera, about when it was captured.
  const std::int64_t read_start_wall_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  while (ahead_span_s < 2.0) {
    auto p = read_packet();
    if (!p) break;
    const std::int64_t ts = p->pts != AV_NOPTS_VALUE ? p->pts : p->dts;
    if (ts != AV_NOPTS_VALUE) {
      if (first_ts == AV_NOPTS_VALUE) first_ts = ts;
      ahead_span_s = static_cast<double>(ts - first_ts) * tb;
    }
    ahead_bytes += p->size;
    ahead.push_back(std::move(p));
  }
  double rate_bps = rate_mbps * 1e6;
  if (rate_bps <= 0) {
    // Measured, with headroom for the record headers and for VBR above the average.
    const double span = std::max(ahead_span_s, 0.5);
    rate_bps = std::max(64e3, Rate::from_bytes_over(ahead_bytes, span).bps() * 1.5);
  }

  // The recorder's clock for every packet: wall = pts + offset, pinned at the first packet read,
  // so packets resent after a reconnect keep the time they were captured.
  std::int64_t wall_offset_us = 0;
  bool have_wall = false;
  const auto to_us = [&](std::int64_t ts) { return static_cast<std::int64_t>(static_cast<double>(ts) * tb * 1e6); };

  proto::Envelope open;
  auto* o = open.mutable_open_record();
  o->set_stream_name(name);
  auto* c = o->mutable_codec();
  c->set_codec_name(avcodec_get_name(par->codec_id));
  c->set_codec_id(par->codec_id);
  c->set_width(par->width);
  c->set_height(par->height);
  c->set_time_base_num(vs->time_base.num);
  c->set_time_base_den(vs->time_base.den);
  if (par->extradata_size > 0) c->set_extradata(par->extradata, static_cast<std::size_t>(par->extradata_size));
  c->set_bit_rate(par->bit_rate);
  o->set_declared_average_rate_bps(static_cast<std::uint64_t>(rate_bps));
  o->set_declared_peak_rate_bps(static_cast<std::uint64_t>(rate_bps));
  o->set_gap_reason(gap_reason);

  // Everything not yet acknowledged stays in `unacked` (sequence = index + base), across
  // reconnects: a new session renumbers it from 1 and sends it again.
  std::deque<Pending> unacked;
  std::uint64_t base = 1, next_seq = 1, acked = 0, sent_upto = 0;
  std::uint64_t total_read = 0, acked_total = 0;  // over all sessions
  std::unique_ptr<WireClient> client;
  std::uint64_t stream_id = 0;
  int sessions = 0;

  // Connects and opens the stream; nullopt on success, else the exit code (refusal is final;
  // an unreachable server is retried by the caller when this is a reconnect).
  auto connect = [&]() -> std::optional<int> {
    try {
      client = std::make_unique<WireClient>(server, std::chrono::seconds(30));
      client->hello("vigil-record", token);
    } catch (const std::exception& e) {
      std::cerr << "vigil record: cannot reach vigild at " << server << ": " << e.what() << "\n";
      return kExitUnreachable;
    }
    if (sessions > 0 && !unacked.empty()) {
      const auto& first = unacked.front().env.media_packet();
      if (have_wall && first.has_pts()) o->set_first_wall_us(to_us(first.pts()) + wall_offset_us);
      o->set_gap_reason(gap_reason.empty() ? "recorder lost its connection to vigild; reconnected" : gap_reason);
    } else if (have_wall && !ahead.empty() && ahead.front()->pts != AV_NOPTS_VALUE) {
      o->set_first_wall_us(to_us(ahead.front()->pts) + wall_offset_us);
    }
    try {
      client->send(open);
      auto reply = client->receive();
      if (reply.msg.has_refuse()) {
        std::cerr << "vigil record: refused by admission: " << reply.msg.refuse().reason()
                  << " (largest rate that fits: " << static_cast<double>(reply.msg.refuse().largest_rate_bps()) / 1e6
                  << " Mbit/s)\n";
        return kExitRefused;
      }
      if (!reply.msg.has_admit()) throw std::runtime_error("unexpected reply to open-record");
      stream_id = reply.msg.admit().stream_id();
      std::cerr << "vigil record: admitted as stream " << stream_id << " at " << rate_bps / 1e6 << " Mbit/s, cycle "
                << static_cast<double>(reply.msg.admit().cycle_us()) / 1e3 << " ms\n";
    } catch (const std::exception& e) {
      std::cerr << "vigil record: " << e.what() << "\n";
      return kExitUnreachable;
    }
    // Renumber what is still unacknowledged for the new stream.
    acked_total += acked;
    acked = 0;
    base = 1;
    std::uint64_t seq = 1;
    for (auto& pd : unacked) {
      pd.env.mutable_media_packet()->set_stream_id(stream_id);
      pd.env.mutable_media_packet()->set_sequence(seq++);
    }
    next_seq = seq;
    sent_upto = 0;
    ++sessions;
    return std::nullopt;
  };
  // The first packet read pins the recorder's clock.
  if (!ahead.empty()) {
    const auto& p = ahead.front();
    const std::int64_t ts = p->pts != AV_NOPTS_VALUE ? p->pts : p->dts;
    if (ts != AV_NOPTS_VALUE) {
      wall_offset_us = read_start_wall_us - to_us(ts);
      have_wall = true;
    }
  }
  if (auto rc = connect()) return *rc;

  const auto t0 = std::chrono::steady_clock::now();
  std::int64_t media_t0 = AV_NOPTS_VALUE;
  auto take = [&](const Received& r) {
    if (r.msg.has_durable_ack()) acked = std::max<std::uint64_t>(acked, r.msg.durable_ack().last_sequence());
    while (!unacked.empty() && base <= acked) {
      unacked.pop_front();
      ++base;
    }
  };
  auto next_packet = [&]() -> std::unique_ptr<AVPacket, PacketFree> {
    if (!ahead.empty()) {
      auto p = std::move(ahead.front());
      ahead.pop_front();
      return p;
    }
    return input_done ? nullptr : read_packet();
  };
  bool more = true;
  for (;;) {
    try {
      // Send loop: bursts of ~100 ms of media, a ping as barrier, refused packets resent after
      // the next acknowledgement.
      while (more || sent_upto < next_seq - 1) {
        double burst_end = -1;
        while (more) {
          auto p = next_packet();
          if (!p) {
            more = false;
            break;
          }
          const std::int64_t ts = p->pts != AV_NOPTS_VALUE ? p->pts : p->dts;
          if (ts != AV_NOPTS_VALUE && media_t0 == AV_NOPTS_VALUE) media_t0 = ts;
          const double at = ts != AV_NOPTS_VALUE ? static_cast<double>(ts - media_t0) * tb : 0;
          if (duration_s > 0 && at >= duration_s) {
            more = false;
            break;
          }
          Pending pd;
          auto* m = pd.env.mutable_media_packet();
          m->set_stream_id(stream_id);
          m->set_sequence(next_seq++);
          m->set_has_pts(p->pts != AV_NOPTS_VALUE);
          m->set_pts(p->pts != AV_NOPTS_VALUE ? p->pts : 0);
          m->set_has_dts(p->dts != AV_NOPTS_VALUE);
          m->set_dts(p->dts != AV_NOPTS_VALUE ? p->dts : 0);
          m->set_duration(p->duration);
          m->set_keyframe((p->flags & AV_PKT_FLAG_KEY) != 0);
          m->set_payload_bytes(static_cast<std::uint32_t>(p->size));
          pd.payload.assign(reinterpret_cast<const std::byte*>(p->data),
                            reinterpret_cast<const std::byte*>(p->data) + p->size);
          unacked.push_back(std::move(pd));
          ++total_read;
          if (burst_end < 0) burst_end = at + 0.1;
          if (at >= burst_end) break;
        }
        // Real-time pacing: do not send media before its time.
        if (!fast && burst_end > 0) {
          std::this_thread::sleep_until(t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                 std::chrono::duration<double>(burst_end - 0.1)));
        }
        // Send what has not been sent (or was refused), in one write.
        for (std::uint64_t seq = sent_upto + 1; seq < next_seq; ++seq) {
          const auto& pd = unacked[seq - base];
          client->queue(pd.env, pd.payload);
        }
        sent_upto = next_seq - 1;
        client->flush();
        // Take what vigild has said so far (acknowledgements, refusals) without waiting: a
        // burst costs the server one read and no reply.
        std::uint64_t first_refused = 0;
        auto refused = [&](const ServerError& e) {
          if (e.code != proto::ERROR_CODE_RATE_EXCEEDED && e.code != proto::ERROR_CODE_INVALID_ARGUMENT) throw e;
          if (first_refused == 0 || e.related_sequence < first_refused) first_refused = e.related_sequence;
        };
        for (;;) {
          try {
            auto r = client->try_receive();
            if (!r) break;
            take(*r);
          } catch (const ServerError& e) {
            refused(e);
          }
        }
        if (first_refused || !more) {
          // Policed, or everything is sent: a ping as barrier — every refusal of what was sent
          // arrives before its pong — so nothing refused goes unnoticed before the end.
          proto::Envelope ping;
          ping.mutable_ping()->set_nonce(sent_upto);
          client->send(ping);
          for (;;) {
            try {
              auto r = client->receive();
              take(r);
              if (r.msg.has_pong()) break;
            } catch (const ServerError& e) {
              refused(e);
            }
          }
        }
        if (first_refused) {
          // Policed: the cycle's half was full. Once everything before the refused packet is
          // durable, that half has been written and a fresh one fills: resend from there.
          // (Waiting for "the next ack" instead would wait forever when it came already.)
          while (acked + 1 < first_refused) take(client->receive());
          sent_upto = std::max(first_refused, base) - 1;
        }
      }
      // Everything sent: say so and read acknowledgements until vigild ends the stream.
      client->end_recording(stream_id);
      try {
        for (;;) take(client->receive());
      } catch (const std::exception&) {
        // the server closed after its last acknowledgement
      }
      if (unacked.empty() || g_stop.load()) break;
      throw std::runtime_error("vigild closed the stream before acknowledging everything");
    } catch (const ServerError& e) {
      std::cerr << "vigil record: " << e.what() << " (last acknowledged packet " << acked << ")\n";
      acked_total += acked;
      return kExitFailure;
    } catch (const std::exception& e) {
      // The connection to vigild is gone: keep what is not acknowledged and reconnect with
      // backoff (1 s doubling to 30 s) for up to --retry-for seconds.
      std::cerr << "vigil record: lost vigild (" << e.what() << "); " << unacked.size()
                << " packets kept for resending\n";
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(retry_for_s);
      auto delay = std::chrono::milliseconds(1000);
      std::optional<int> rc = kExitUnreachable;
      while (rc && !g_stop.load() && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(delay);
        delay = std::min(delay * 2, std::chrono::milliseconds(30'000));
        rc = connect();
        if (rc && *rc != kExitUnreachable) return *rc;  // refused: final
      }
      if (rc) {
        std::cerr << "vigil record: gave up reconnecting; " << unacked.size() << " packets were not stored\n";
        return kExitFailure;
      }
    }
  }
  acked_total += acked;
  if (g_stop.load()) std::cerr << "vigil record: stopped by signal\n";
  std::cout << "recorded " << total_read << " packets of " << name << " as stream " << stream_id << "; " << acked_total
            << " acknowledged as durable" << (sessions > 1 ? " (over " + std::to_string(sessions) + " connections)" : "")
            << "\n";
  // A camera that went away is a failure for whoever restarts the recorder, even if everything
  // read from it was stored.
  if (input_lost) return kExitFailure;
  return acked_total == total_read ? kExitOk : kExitFailure;
}

}  // namespace vigil::client
