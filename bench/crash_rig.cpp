#include "bench/crash_rig.hpp"

#include <algorithm>
#include <pqxx/pqxx>
#include <random>
#include <set>

#include "client/wire/reply_reader.hpp"
#include "storage/file_device.hpp"
#include "storage/segment_recovery.hpp"
#include "storage/volume.hpp"

namespace vigil::bench {
namespace {

constexpr auto kBurst = std::chrono::milliseconds(100);  // media sent per write, as `vigil record` does
constexpr std::int64_t kTicksPerFrame = 3600;            // 25 fps in a 90 kHz time base
constexpr auto kWireTimeout = std::chrono::seconds(10);

std::int64_t wall_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::vector<std::byte> script_payload(int camera, std::uint64_t g) {
  std::mt19937 rng(static_cast<std::uint32_t>(g * 2654435761u) ^ static_cast<std::uint32_t>(camera * 40503u + 17u));
  std::vector<std::byte> out(200 + rng() % 6000);
  for (auto& b : out) b = std::byte(rng());
  return out;
}

// VigildAddress ----------------------------------------------------------------------------

void VigildAddress::down() {
  std::lock_guard l(mu_);
  up_ = false;
}

void VigildAddress::up(std::string wire) {
  {
    std::lock_guard l(mu_);
    wire_ = std::move(wire);
    ++generation_;
    up_ = true;
  }
  cv_.notify_all();
}

std::optional<std::pair<std::string, std::uint64_t>> VigildAddress::wait_newer(std::uint64_t generation,
                                                                               std::stop_token stop) {
  std::unique_lock l(mu_);
  if (!cv_.wait(l, stop, [&] { return up_ && generation_ > generation; })) return std::nullopt;
  return std::make_pair(wire_, generation_);
}

std::uint64_t VigildAddress::generation() const {
  std::lock_guard l(mu_);
  return generation_;
}

// KillRecorder ------------------------------------------------------------------------------

KillRecorder::KillRecorder(RecorderOptions options, VigildAddress& address)
    : options_(std::move(options)),
      address_(address),
      started_(std::chrono::steady_clock::now()),
      wall_start_us_(wall_now_us()) {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

KillRecorder::~KillRecorder() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

std::string KillRecorder::name() const { return options_.name_prefix + std::to_string(options_.camera); }

std::vector<RecorderConnection> KillRecorder::connections() const {
  std::lock_guard l(mu_);
  return connections_;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> KillRecorder::acks() const {
  std::lock_guard l(mu_);
  return acks_;
}

std::string KillRecorder::error() const {
  std::lock_guard l(mu_);
  return error_;
}

bool KillRecorder::recording_on(std::uint64_t generation) const {
  std::lock_guard l(mu_);
  return std::any_of(connections_.begin(), connections_.end(),
                     [&](const RecorderConnection& c) { return c.generation >= generation && c.first_ack; });
}

bool KillRecorder::finish(std::chrono::milliseconds limit) {
  finishing_ = true;
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done_.load() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a bounded wait for the thread
  }
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
  return all_acked_.load();
}

void KillRecorder::run(std::stop_token stop) {
  std::uint64_t generation = 0;
  while (!stop.stop_requested()) {
    auto at = address_.wait_newer(generation, stop);
    if (!at) return;
    generation = at->second;
    try {
      connect(at->first, generation);
      if (pump(stop)) {
        all_acked_ = true;
        done_ = true;
        return;
      }
    } catch (const std::exception& e) {
      // vigild went away (killed): keep the window and wait for the next one.
      client_.reset();
      first_refused_ = 0;
      std::lock_guard l(mu_);
      error_ = std::string("last connection: ") + e.what();
    }
  }
}

void KillRecorder::connect(const std::string& wire, std::uint64_t generation) {
  client_ = std::make_unique<client::WireClient>(wire, kWireTimeout);
  client_->hello("vigil kill-campaign recorder", options_.token);
  // The window holds the frames from there on: from the current GOP's keyframe, which is resent.
  const std::uint64_t first_g = window_.acked_total() + 1 - window_.gop_head_size();
  proto::Envelope open;
  auto* o = open.mutable_open_record();
  o->set_stream_name(name());
  o->mutable_codec()->set_codec_name("h264");
  o->mutable_codec()->set_time_base_num(1);
  o->mutable_codec()->set_time_base_den(90000);
  // A picture size within the media limits (common/media_limits.hpp); script frames are not decoded.
  o->mutable_codec()->set_width(640);
  o->mutable_codec()->set_height(360);
  o->set_declared_average_rate_bps(options_.declared_rate_bps);
  o->set_declared_peak_rate_bps(options_.declared_rate_bps);
  // The camera's clock: resent frames keep the time they were captured at.
  o->set_first_wall_us(wall_start_us_ + static_cast<std::int64_t>(first_g - 1) * kScriptFrameUs);
  if (!connections().empty()) o->set_gap_reason("vigild went away; the recorder resends what was not acknowledged");
  client_->send(open);
  auto reply = client_->receive();
  if (!reply.msg.has_admit()) {
    throw std::runtime_error(reply.msg.has_refuse() ? "refused: " + reply.msg.refuse().reason()
                                                    : std::string("unexpected reply to open-record"));
  }
  window_.renumber(reply.msg.admit().stream_id());
  RecorderConnection c;
  c.generation = generation;
  c.stream_id = reply.msg.admit().stream_id();
  c.first_g = first_g;
  c.acked_before = first_g - 1;
  c.produced_at_admit = produced_.load();
  c.admitted = std::chrono::steady_clock::now();
  std::lock_guard l(mu_);
  connections_.push_back(c);
}

void KillRecorder::capture_due() {
  const auto elapsed = std::chrono::steady_clock::now() - started_;
  const auto due = static_cast<std::uint64_t>(elapsed / std::chrono::microseconds(kScriptFrameUs)) + 1;
  while (produced_.load() < due) {
    const std::uint64_t g = produced_.load() + 1;
    client::PendingPacket p;
    auto* m = p.env.mutable_media_packet();
    const auto pts = static_cast<std::int64_t>(g - 1) * kTicksPerFrame;
    m->set_pts(pts);
    m->set_has_pts(true);
    m->set_dts(pts);
    m->set_has_dts(true);
    m->set_duration(kTicksPerFrame);
    m->set_keyframe(g % 25 == 1);
    p.payload = script_payload(options_.camera, g);
    m->set_payload_bytes(static_cast<std::uint32_t>(p.payload.size()));
    window_.push(std::move(p));
    produced_ = g;
  }
}

void KillRecorder::take(const client::Received& r) {
  if (!r.msg.has_durable_ack()) return;
  window_.acknowledge(r.msg.durable_ack().last_sequence());
  acked_ = window_.acked_total();
  std::lock_guard l(mu_);
  acks_.emplace_back(r.msg.durable_ack().stream_id(), r.msg.durable_ack().last_sequence());
  if (!connections_.empty() && !connections_.back().first_ack)
    connections_.back().first_ack = std::chrono::steady_clock::now();
}

void KillRecorder::send_unsent() {
  const auto unsent = window_.unsent();
  if (unsent.empty()) return;
  for (const auto* p : unsent) client_->queue(p->env, p->payload);
  window_.mark_sent();
  client_->flush();
}

void KillRecorder::take_replies(bool wait_for_barrier) {
  client::read_replies(
      *client_, wait_for_barrier, window_.last_sent(), [this](const client::Received& r) { take(r); },
      [this](const client::ServerError& e) {
        // The rig's frames are far smaller than any buffer: a frame too large is a bug to report.
        if (e.code == proto::ERROR_CODE_FRAME_EXCEEDS_BUFFER) throw e;
        if (!first_refused_ || e.related_sequence < first_refused_) first_refused_ = e.related_sequence;
      });
}

bool KillRecorder::pump(std::stop_token stop) {
  auto next_burst = std::chrono::steady_clock::now();
  for (;;) {
    if (stop.stop_requested()) throw std::runtime_error("stopped");
    if (!finishing_) capture_due();
    send_unsent();
    take_replies(false);
    if (first_refused_) {
      // Policed: the cycle's half was full, and vigild dropped what followed the refused packet
      // (each refused as out of order). A ping as barrier: every refusal of what was sent comes
      // before its pong. Then, once what is before the refused packet is durable, resend from it.
      take_replies(true);
      while (window_.acked() + 1 < first_refused_) take(client_->receive());
      window_.resend_from(first_refused_);
      first_refused_ = 0;
      continue;
    }
    if (finishing_ && window_.all_sent()) {
      take_replies(true);  // a refusal of the last burst is resent before the stream ends
      if (first_refused_) continue;
      client_->end_recording(window_.stream_id());
      try {
        for (;;) take(client_->receive());
      } catch (const client::ServerError&) {
        throw;
      } catch (const std::exception&) {
        // vigild closed the stream after its last acknowledgement
      }
      if (!window_.empty()) {
        throw std::runtime_error("vigild ended the stream with " + std::to_string(window_.size()) +
                                 " frames unacknowledged");
      }
      return true;
    }
    next_burst += kBurst;
    std::this_thread::sleep_until(next_burst);  // real-time pacing of the camera, not a wait for a result
  }
}

// Catalog and volumes -------------------------------------------------------------------------

CatalogSnapshot snapshot_catalog(const std::string& conninfo, std::chrono::milliseconds limit) {
  pqxx::connection conn(conninfo);
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    pqxx::nontransaction q(conn);
    const auto busy = q.exec1(
                           "SELECT (SELECT count(*) FROM segments WHERE state = 'open') + "
                           "(SELECT count(*) FROM streams WHERE state IN ('pending', 'recording'))")[0]
                          .as<std::int64_t>();
    if (busy == 0) break;
    if (std::chrono::steady_clock::now() >= until) {
      throw std::runtime_error(std::to_string(busy) + " segments or streams still open in the catalog");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a bounded wait for the batcher
  }
  CatalogSnapshot s;
  pqxx::read_transaction tx(conn);
  for (const auto& row : tx.exec("SELECT id, path FROM volumes")) {
    s.volume_paths[row[0].as<std::int64_t>()] = row[1].as<std::string>();
  }
  for (const auto& row : tx.exec("SELECT s.id, c.name FROM streams s JOIN cameras c ON c.id = s.camera_id")) {
    s.stream_camera[row[0].as<std::uint64_t>()] = row[1].as<std::string>();
  }
  for (const auto& row :
       tx.exec("SELECT id, stream_id, volume_id, start_us, end_us, frame_count, state FROM segments ORDER BY id")) {
    s.segments.push_back({row[0].as<std::uint64_t>(), row[1].as<std::uint64_t>(), row[2].as<std::int64_t>(),
                          row[3].as<std::int64_t>(), row[4].as<std::int64_t>(), row[5].as<std::int64_t>(),
                          row[6].as<std::string>()});
  }
  for (const auto& row : tx.exec("SELECT stream_id, start_us, end_us, reason FROM gaps")) {
    s.gaps.push_back(
        {row[0].as<std::uint64_t>(), row[1].as<std::int64_t>(), row[2].as<std::int64_t>(), row[3].as<std::string>()});
  }
  return s;
}

namespace {

struct StreamOrigin {
  const KillRecorder* recorder = nullptr;
  std::uint64_t first_g = 0;
};

void problem(Verdict& v, std::string line) {
  if (v.problems.size() < 20) v.problems.push_back(std::move(line));
}

// Spans of each camera's timeline that neither a segment nor a gap covers.
void check_timeline(const CatalogSnapshot& s, Verdict& v) {
  std::map<std::string, std::vector<std::pair<std::int64_t, std::int64_t>>> spans;
  for (const auto& g : s.segments) {
    if (g.frame_count > 0 && s.stream_camera.contains(g.stream_id))
      spans[s.stream_camera.at(g.stream_id)].emplace_back(g.start_us, g.end_us);
  }
  for (const auto& g : s.gaps) {
    if (g.reason == "crash_recovery") ++v.crash_gaps;
    if (s.stream_camera.contains(g.stream_id))
      spans[s.stream_camera.at(g.stream_id)].emplace_back(g.start_us, g.end_us);
  }
  for (auto& [camera, list] : spans) {
    std::sort(list.begin(), list.end());
    std::int64_t covered = list.front().first;
    for (const auto& [from, to] : list) {
      if (from > covered) {
        ++v.holes;
        problem(v, camera + ": nothing recorded and no gap over [" + std::to_string(covered) + ", " +
                       std::to_string(from) + ") us (" + std::to_string((from - covered) / 1000) + " ms)");
      }
      covered = std::max(covered, to);
    }
  }
}

}  // namespace

Verdict verify_round(const CatalogSnapshot& s, const std::vector<std::unique_ptr<KillRecorder>>& recorders) {
  Verdict v;
  std::map<std::uint64_t, StreamOrigin> origin;                   // stream id -> the recorder that opened it
  std::map<const KillRecorder*, std::vector<std::uint8_t>> seen;  // script frames found, by G
  for (const auto& r : recorders) {
    for (const auto& c : r->connections()) origin[c.stream_id] = {r.get(), c.first_g};
    seen[r.get()].assign(r->produced() + 1, 0);
    v.frames_acked += r->acked();
  }
  std::map<std::int64_t, std::vector<const CatalogSegment*>> by_volume;
  for (const auto& g : s.segments) by_volume[g.volume_id].push_back(&g);

  for (const auto& [volume_id, segments] : by_volume) {
    const auto path = s.volume_paths.contains(volume_id) ? s.volume_paths.at(volume_id) : std::string();
    auto dev = storage::FileDevice::open(path);
    if (!dev) throw std::runtime_error("cannot open volume " + path + ": " + dev.error().message());
    auto vol = storage::Volume::open(**dev);
    if (!vol) throw std::runtime_error("cannot open volume " + path + ": " + vol.error().message());
    std::set<std::uint64_t> catalogued;
    for (const auto* g : segments) {
      catalogued.insert(g->id);
      if (g->state != "closed") {
        ++v.unreadable_segments;
        problem(v, "segment " + std::to_string(g->id) + " is " + g->state);
        continue;
      }
      if (!(*vol)->segments().contains(g->id)) {
        if (g->frame_count > 0) {
          ++v.unreadable_segments;
          problem(v, "segment " + std::to_string(g->id) + " of the catalog is not on volume " + path);
        }
        continue;
      }
      std::uint64_t frames = 0;
      auto rec = storage::recover_segment(**vol, g->id, [&](const storage::ScannedRecord& rec) {
        ++frames;
        ++v.frames_read;
        const auto it = origin.find(rec.header.stream_id);
        if (it == origin.end() || rec.header.stream_id != g->stream_id) {
          ++v.invalid_frames;
          problem(v, "segment " + std::to_string(g->id) + " holds a frame of stream " +
                         std::to_string(rec.header.stream_id) + " no recorder opened");
          return;
        }
        const auto* r = it->second.recorder;
        const std::uint64_t gno = it->second.first_g + rec.header.sequence - 1;
        const auto want = script_payload(r->camera(), gno);
        const bool same_bytes = rec.header.sequence >= 1 && gno <= r->produced() &&
                                std::equal(rec.payload.begin(), rec.payload.end(), want.begin(), want.end());
        const std::int64_t want_pts = r->wall_start_us() + static_cast<std::int64_t>(gno - 1) * kScriptFrameUs;
        if (same_bytes && rec.header.pts != want_pts) {
          ++v.invalid_frames;
          problem(v, r->name() + " frame " + std::to_string(gno) + " stored at " + std::to_string(rec.header.pts) +
                         " us, captured at " + std::to_string(want_pts));
          return;
        }
        if (!same_bytes) {
          ++v.invalid_frames;
          problem(v, r->name() + " frame " + std::to_string(gno) + " (stream " + std::to_string(rec.header.stream_id) +
                         " sequence " + std::to_string(rec.header.sequence) + ") differs from what was sent");
          return;
        }
        auto& mark = seen[r][gno];
        if (mark) ++v.duplicates;
        mark = 1;
      });
      if (!rec) {
        ++v.unreadable_segments;
        problem(v, "segment " + std::to_string(g->id) + " unreadable: " + rec.error().message());
      } else if (static_cast<std::int64_t>(frames) != g->frame_count) {
        ++v.count_mismatches;
        problem(v, "segment " + std::to_string(g->id) + ": the catalog says " + std::to_string(g->frame_count) +
                       " frames, the volume holds " + std::to_string(frames));
      }
    }
    for (const auto& [id, uses] : (*vol)->segments()) {
      if (!catalogued.contains(id)) {
        ++v.orphans;
        problem(v, "segment " + std::to_string(id) + " on volume " + path + " is not in the catalog");
      }
    }
  }
  for (const auto& r : recorders) {
    const auto& marks = seen[r.get()];
    std::uint64_t first_missing = 0, missing = 0;
    for (std::uint64_t g = 1; g <= r->acked(); ++g) {
      if (marks[g]) continue;
      if (!first_missing) first_missing = g;
      ++missing;
    }
    v.acked_lost += missing;
    if (missing) {
      problem(v, r->name() + ": " + std::to_string(missing) + " acknowledged frames missing, the first " +
                     std::to_string(first_missing));
    }
  }
  check_timeline(s, v);
  return v;
}

}  // namespace vigil::bench
