#include "client/cli/record_command.hpp"

#include <signal.h>
#include <unistd.h>

extern "C" {
#include <libavutil/log.h>
}

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <iostream>
#include <mutex>
#include <thread>

#include "client/cli/audio_track.hpp"
#include "client/cli/av_log_line.hpp"
#include "client/cli/input_demuxer.hpp"
#include "client/cli/line_log.hpp"
#include "client/cli/rate_policy.hpp"
#include "client/cli/recorder_session.hpp"
#include "common/command_line.hpp"
#include "common/exit_codes.hpp"
#include "common/redact.hpp"

namespace po = boost::program_options;

namespace vigil::client {
namespace {

constexpr CommandHelp kHelp{
    "vigil record",
    "Usage: vigil [--server HOST:PORT] record --stream NAME INPUT [options]\n"
    "       vigil [--server HOST:PORT] record --stream NAME --url-fd N [options]\n\n"
    "Records INPUT (anything FFmpeg opens: a file, an rtsp:// camera URL) into vigild without\n"
    "decoding: codec parameters and packets of its video stream go over the wire protocol, paced at\n"
    "real time. Packets are kept until vigild acknowledges them as durable; packets refused for\n"
    "exceeding the admitted rate are sent again after the next acknowledgement.\n"
    "A camera (rtsp://, or --as-live) is read on its own thread and never made to wait: what vigild does\n"
    "not take in time beyond a 1.5 s queue is dropped up to the next keyframe and recorded as a\n"
    "rate_exceeded gap; a hole in its timestamps is recorded as a source_loss gap.\n"
    "SIGINT/SIGTERM stop reading the input; what was read is still sent and acknowledged.\n"
    "rtsp:// inputs use TCP and give up after 10 s without data.\n"
    "Audio (AAC, G.711 mu-law/A-law, Opus) is recorded beside the video as the stream's audio, without\n"
    "transcoding, over its own connection (--no-audio leaves it out); audio of another codec is left out\n"
    "with a warning.\n"
    "A camera URL with a password is better passed with --url-fd than as INPUT: a command line is\n"
    "readable by every local user (/proc/PID/cmdline). Passwords are masked in everything printed.\n",
    "\nExit: 0 every packet acknowledged, 1 failed, 2 usage, 3 server unreachable, 4 refused by admission\n"
    "(the reason and the largest rate that would fit are printed).\n"};

// Set by SIGINT/SIGTERM: stop reading the input, finish sending, exit.
std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) { g_stop.store(true); }

struct RecordArgs {
  std::string name, input;
  std::string role;  // the camera's track: "main" (empty) or "sub"
  int url_fd = -1;
  double rate_mbps = 0;
  bool no_audio = false;
  RecordOptions session;
};

po::options_description record_options(RecordArgs& a) {
  po::options_description o("Options");
  o.add_options()                                                                                        //
      ("stream", po::value(&a.name)->value_name("NAME"), "camera/stream name (letters, digits, . _ -)")  //
      ("role", po::value(&a.role)->value_name("main|sub"),
       "which of the camera's video streams INPUT is: main (default) or sub, its low-resolution encoding, "
       "recorded beside the main one and played with stream=sub")  //
      ("rate", po::value(&a.rate_mbps)->value_name("MBPS"),
       "declared rate in Mbit/s (default: the rate INPUT advertises, else its first GOP measured, with a "
       "margin)")  //
      ("no-audio", po::bool_switch(&a.no_audio),
       "record the video only, not the input's audio (a --role sub input's audio is never recorded: the main "
       "one's is)")                                                                                     //
      ("duration", po::value(&a.session.duration_s)->value_name("S"), "stop after S seconds of media")  //
      ("fast", po::bool_switch(&a.session.fast),
       "do not pace at real time (files only; vigild still polices the rate)")  //
      ("as-live", po::bool_switch(&a.session.as_live),
       "read INPUT as a camera is read: at real time, never waiting for vigild; what vigild does not take "
       "in time is dropped as rate_exceeded gaps (tests, demos)")  //
      ("retry-for", po::value(&a.session.retry_for_s)->value_name("S")->default_value(a.session.retry_for_s),
       "when vigild goes away, reconnect (backoff 1 s to 30 s) for up to S seconds and resend everything not "
       "acknowledged")  //
      ("gap-reason", po::value(&a.session.gap_reason)->value_name("TEXT"),
       "why this camera's previous recording ended (recorded as the gap's detail; the camera manager passes it "
       "when it restarts a pull)")  //
      ("url-fd", po::value(&a.url_fd)->value_name("N"),
       "read INPUT from descriptor N (to its end) instead of the command line: how vigild hands a camera URL "
       "with its password to the recorder (vigild's pulled cameras use it)");
  return o;
}

// INPUT from descriptor FD, read to its end and closed; one trailing newline dropped. Throws.
std::string read_input_from_fd(int fd) {
  std::string text;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error("--url-fd " + std::to_string(fd) + ": " + std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > 64 * 1024) throw std::runtime_error("--url-fd " + std::to_string(fd) + ": more than 64 KiB");
  }
  ::close(fd);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) throw std::runtime_error("--url-fd " + std::to_string(fd) + ": no URL was written to it");
  return text;
}

// FFmpeg's own messages (to stderr, i.e. the camera's log under vigild) with URL passwords
// masked: a demuxer may quote the URL it was given.
void redacting_av_log(void* avcl, int level, const char* fmt, va_list args) {
  const auto line = av_log_line(avcl, level, fmt, args);
  if (!line) return;
  const auto text = redact_credentials(*line) + "\n";
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, text.data(), text.size());
}

void catch_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

std::int64_t wall_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

proto::Envelope open_record(const RecordArgs& a, const InputDemuxer& input, double rate_bps) {
  proto::Envelope open;
  auto* o = open.mutable_open_record();
  o->set_stream_name(a.name);
  if (!a.role.empty() && a.role != "main") o->set_role(a.role);
  input.describe(*o->mutable_codec());
  o->set_declared_average_rate_bps(static_cast<std::uint64_t>(rate_bps));
  o->set_declared_peak_rate_bps(static_cast<std::uint64_t>(rate_bps));
  o->set_gap_reason(a.session.gap_reason);
  return open;
}

RecordOptions session_options(const RecordArgs& a, std::ostream& log) {
  auto o = a.session;
  o.log = &log;
  return o;
}

int record_input(const RecordArgs& a, const std::atomic<bool>& g_stop, std::ostream& log, std::ostream& out);

struct AudioResult {
  int rc = exit_code::kOk;
  std::uint64_t read = 0, acked = 0, stream_id = 0;
  bool recorded = false;  // a session ran (the input had audio packets)
};

// The input's audio as its own stream of the camera (media_kind audio, role main), beside the
// video session: it waits for the first audio packet, so both are on the recorder's one wall
// clock (WALL_OFFSET_US, the video's: libavformat puts every stream of an input on one
// timeline), or, for the buffered RTSP session, whose streams' RTP clocks are unrelated, at the
// wall clock of the first audio packet's arrival (as the video's is).
AudioResult record_audio(const RecordArgs& a, AudioTrack& audio, bool own_clock,
                         std::optional<std::int64_t> wall_offset_us, const std::atomic<bool>& g_stop,
                         std::ostream& log) {
  AudioResult r;
  if (!audio.wait_first_packet()) return r;
  if (own_clock) {
    const auto arrival = audio.first_arrival_wall_us();
    const auto pts = audio.first_pts();
    wall_offset_us = arrival && pts ? std::optional(*arrival - audio.to_us(*pts)) : std::nullopt;
  }
  proto::Envelope open;
  auto* o = open.mutable_open_record();
  o->set_stream_name(a.name);
  o->set_role("main");
  o->set_media_kind("audio");
  audio.describe(*o->mutable_codec());
  const double rate_bps = audio.declared_rate_bps();  // --rate is the video's
  o->set_declared_average_rate_bps(static_cast<std::uint64_t>(rate_bps));
  o->set_declared_peak_rate_bps(static_cast<std::uint64_t>(rate_bps));
  o->set_gap_reason(a.session.gap_reason);
  log << "vigil record: declaring " << rate_bps / 1e3 << " kbit/s for its audio (" << audio.codec_name() << ")\n";
  auto options = a.session;
  options.log = &log;
  RecorderSession session(options, audio, std::move(open), wall_offset_us, g_stop);
  r.recorded = true;
  r.rc = session.run();
  r.read = session.packets_read();
  r.acked = session.packets_acked();
  r.stream_id = session.stream_id();
  return r;
}

}  // namespace

int record_main(const std::string& server, const std::string& token, const std::vector<std::string>& args) {
  RecordArgs a;
  std::vector<std::string> words;
  if (auto rc = parse_command_line(args, record_options(a), kHelp, &words, 1)) return *rc;
  if (a.name.empty()) return usage_error(kHelp, "--stream is required");
  if (!a.role.empty() && a.role != "main" && a.role != "sub") return usage_error(kHelp, "--role must be main or sub");
  if (words.empty() == (a.url_fd < 0)) return usage_error(kHelp, "give INPUT or --url-fd N (one of them)");
  if (a.rate_mbps < 0 || a.session.duration_s < 0 || a.session.retry_for_s < 0) {
    return usage_error(kHelp, "--rate, --duration and --retry-for must not be negative");
  }
  av_log_set_callback(redacting_av_log);
  try {
    a.input = a.url_fd >= 0 ? read_input_from_fd(a.url_fd) : words.front();
  } catch (const std::exception& e) {
    std::cerr << "vigil record: " << e.what() << "\n";
    return exit_code::kUsage;
  }
  a.session.server = server;
  a.session.token = token;

  catch_stop_signals();
  return record_input(a, g_stop, std::cerr, std::cout);
}

// The recording itself, after the arguments: from opening INPUT to the last acknowledgement.
// What it says goes to LOG (std::cerr for `vigil record`, the camera's tagged lines in an ingest
// worker); its summary line to OUT.
namespace {
int record_input(const RecordArgs& a, const std::atomic<bool>& g_stop, std::ostream& shared_log, std::ostream& out) {
  // The audio is recorded on its own thread beside this one's video: every line either says goes
  // through a line log (whole lines, the audio's tagged), the input's own included.
  std::mutex log_mu;
  LineLog log(shared_log, log_mu, ""), audio_log(shared_log, log_mu, "audio: ");
  std::unique_ptr<InputDemuxer> input;
  try {
    // A sub stream's audio is its main stream's (the camera's one microphone): recorded there once.
    const bool with_audio = !a.no_audio && (a.role.empty() || a.role == "main");
    input = std::make_unique<InputDemuxer>(a.input, g_stop, log, with_audio);
  } catch (const std::exception& e) {
    log << "vigil record: " << e.what() << "\n";
    return exit_code::kFailed;
  }
  {
    proto::CodecParameters codec;
    input->describe(codec);
    log << "vigil record: reading " << codec.codec_name() << " " << codec.width() << "x" << codec.height() << " with "
        << input->reader() << "\n";
    if (const auto* audio = input->audio()) {
      audio->describe(codec);
      log << "vigil record: and its audio: " << codec.codec_name() << " " << codec.sample_rate() << " Hz, "
          << codec.channels() << " channel(s), as its own stream\n";
    }
  }
  // When the first packet was read: with a live camera, about when it was captured.
  const std::int64_t read_start_wall_us = wall_now_us();
  // The declared rate from what is known (rate_policy.hpp); a GOP is read ahead only when the
  // input says nothing of its rate (and at least one packet, for the recorder's clock).
  RateEvidence evidence{.override_bps = a.rate_mbps * 1e6, .advertised_bps = input->advertised_bps()};
  if (evidence.override_bps <= 0 && evidence.advertised_bps <= 0) evidence.measured.emplace();
  input->read_ahead_until([&](const AVPacket& p) {
    if (!evidence.measured) return true;
    const auto ts = timestamp_of(p);
    return evidence.measured->packet(ts ? std::optional(static_cast<double>(*ts) * input->time_base_s()) : std::nullopt,
                                     p.size, (p.flags & AV_PKT_FLAG_KEY) != 0);
  });
  const auto declared = declared_rate(evidence);
  const double rate_bps = declared.bps;
  log << "vigil record: declaring " << rate_bps / 1e6 << " Mbit/s (" << declared.basis << ")\n";
  // The recorder's clock for every packet: wall = pts + offset, pinned at the first packet read,
  // so packets resent after a reconnect keep the time they were captured.
  std::optional<std::int64_t> wall_offset_us;
  if (const auto ts = input->first_timestamp()) wall_offset_us = read_start_wall_us - input->to_us(*ts);

  AudioResult audio;
  std::jthread audio_thread;
  if (auto* track = input->audio()) {
    audio_thread = std::jthread([&, track] {
      audio = record_audio(a, *track, input->reader() == std::string_view("rtsp"), wall_offset_us, g_stop, audio_log);
    });
  }
  RecorderSession session(session_options(a, log), *input, open_record(a, *input, rate_bps), wall_offset_us, g_stop);
  const int video_rc = session.run();  // its end ends the audio's input too
  if (audio_thread.joinable()) audio_thread.join();
  if (video_rc != exit_code::kOk) return video_rc;
  if (audio.rc != exit_code::kOk) return audio.rc;
  if (g_stop.load()) log << "vigil record: stopped by signal\n";
  out << "recorded " << session.packets_read() << " packets of " << a.name << " as stream " << session.stream_id()
      << "; " << session.packets_acked() << " acknowledged as durable"
      << (session.connections() > 1 ? " (over " + std::to_string(session.connections()) + " connections)" : "") << "\n";
  if (audio.recorded) {
    out << "recorded " << audio.read << " audio packets of " << a.name << " as stream " << audio.stream_id << "; "
        << audio.acked << " acknowledged as durable\n";
  }
  if (session.packets_dropped() > 0) {
    out << session.packets_dropped() << " packets dropped above the admitted rate (rate_exceeded gaps)\n";
  }
  // A camera that went away is a failure for whoever restarts the recorder, even if everything
  // read from it was stored.
  if (input->lost()) return exit_code::kFailed;
  return session.packets_acked() == session.packets_read() && audio.acked == audio.read ? exit_code::kOk
                                                                                        : exit_code::kFailed;
}
}  // namespace

int record_pull(const PullArgs& pull, const std::atomic<bool>& stop, std::ostream& log) {
  RecordArgs a;
  a.name = pull.name;
  a.role = pull.role;
  a.input = pull.input;
  a.session.server = pull.server;
  a.session.token = pull.token;
  a.session.gap_reason = pull.gap_reason;
  a.rate_mbps = pull.rate_bps / 1e6;
  return record_input(a, stop, log, log);
}

}  // namespace vigil::client
