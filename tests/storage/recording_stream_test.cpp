// Recording through the cycle scheduler on a simulated disk: frames from the "network" side,
// one durable stream IO per stream per cycle, acknowledgements only after the cycle's flush,
// segments rolling over. Then power is cut at random command counts: after recovery, every
// acknowledged frame of every stream is there, byte for byte, and nothing is served that was
// not written. An injected write or flush failure ends the stream where it was durable: no later
// acknowledgement covers the failed batch, and the stream refuses further frames.
#include <catch2/catch_test_macros.hpp>

#include <atomic>
#include <map>
#include <optional>
#include <set>
#include <random>
#include <string>

#include "storage/cycle_scheduler.hpp"
#include "storage/recording_stream.hpp"
#include "storage/segment_recovery.hpp"
#include "storage/simulated_disk.hpp"
#include "tests/support/script_frames.hpp"

using namespace vigil::storage;
using namespace std::chrono_literals;
using vigil::errc;

namespace {

struct Recorder {
  std::uint64_t stream;
  std::unique_ptr<RecordingStream> rec;
  std::uint64_t next_seq = 1;
  std::uint64_t acked = 0;
  std::vector<SegmentSummary> closed;
  std::optional<std::uint64_t> failed;  // the last durable sequence the stream reported failing at
  std::uint64_t refused_after_failure = 0;
};

struct Rig {
  // MAX_SEGMENT_PTS: segments also close at this much media time (0: by size only).
  explicit Rig(const std::atomic<bool>* volume_failing = nullptr, std::int64_t max_segment_pts = 0)
      : disk(clock, {.size_bytes = 64 << 20}) {
    REQUIRE(Volume::format(disk, {.extent_bytes = 1 << 20}).has_value());
    volume = *Volume::open(disk);
    sched = std::make_unique<CycleScheduler>(disk, clock, model, SchedulerConfig{.cycle = 1s, .chunk_bytes = 16 * 1024},
                                             &clock);
    for (std::uint64_t s = 1; s <= 3; ++s) {
      auto r = std::make_unique<Recorder>();
      r->stream = s;
      Recorder* raw = r.get();
      r->rec = std::make_unique<RecordingStream>(
          *volume, s, std::vector<std::byte>(40, std::byte{0x42}), 1, 0,
          RecordingStreamOptions{.io_bytes = 48 * 1024,
                                 .max_segment_bytes = 300 * 1024,
                                 .max_segment_pts = max_segment_pts,
                                 .volume_failing = volume_failing},
          [this] { return ++next_segment; },
          [raw](std::uint64_t seq) {
            CHECK(seq > raw->acked);  // acknowledgements only move forward
            raw->acked = seq;
          },
          [raw](const SegmentSummary& c) { raw->closed.push_back(c); },
          [raw](std::uint64_t last_durable) {
            CHECK_FALSE(raw->failed.has_value());  // a stream fails once
            raw->failed = last_durable;
          });
      sched->add_stream(s, *r->rec, clock.now());
      recorders.push_back(std::move(r));
    }
  }
  // One cycle: each recorder sends frames until its half is full (policing says so), then the
  // scheduler writes, flushes and acknowledges.
  void cycle() {
    for (auto& r : recorders) {
      for (int i = 0; i < frames_per_cycle; ++i) {
        auto f = vigil::test::script_frame(r->next_seq, r->stream);
        auto ok = r->rec->append(f.header, f.payload);
        if (!ok) {
          if (r->failed) {
            CHECK(ok.error() == errc::io_error);
            ++r->refused_after_failure;
          } else {
            CHECK(ok.error() == errc::rate_exceeded);
          }
          break;
        }
        ++r->next_seq;
      }
    }
    sched->run_cycle();
  }
  VirtualClock clock;
  SimulatedDisk disk;
  LinearServiceModel model{100us, 200e6};
  std::unique_ptr<Volume> volume;
  std::unique_ptr<CycleScheduler> sched;
  std::vector<std::unique_ptr<Recorder>> recorders;
  std::uint64_t next_segment = 100;
  int frames_per_cycle = 30;  // offered per stream and cycle: 30 is more than a half holds
};

}  // namespace

TEST_CASE("recording through the scheduler acknowledges only flushed frames and rolls segments", "[recording]") {
  Rig rig;
  for (int i = 0; i < 40; ++i) rig.cycle();
  CHECK(rig.sched->totals().misses == 0);
  for (auto& r : rig.recorders) {
    INFO("stream " << r->stream);
    CHECK(r->acked > 100);
    CHECK(r->acked < r->next_seq);  // the last cycle's frames are still in the filling half
    CHECK(r->closed.size() >= 2);   // 300 KiB segments over ~1.9 MB of frames
    std::uint64_t expect = 1;
    for (const auto& c : r->closed) {
      CHECK(c.first_sequence == expect);  // segments continue each other without a hole
      expect = c.last_sequence + 1;
    }
    CHECK(r->rec->refused_frames() > 0);  // 30 frames a cycle is more than 48 KiB holds
    CHECK(r->rec->memory_bytes() == 2 * 48 * 1024);
    // Measured over the last 60 cycles: close to a full half per cycle, and it varies (VBR frames).
    const auto rate = r->rec->measured_rate();
    CHECK(rate.cycles == 40);
    CHECK(rate.mean > 0.6 * 48 * 1024);
    CHECK(rate.mean <= 48 * 1024);
    CHECK(rate.stddev > 0);
  }
  CHECK(rig.disk.counters().flushes >= 39);  // one per cycle, not one per stream
  CHECK(rig.disk.counters().flushes < 60);
  // Every segment of a stream, the rolled ones too, carries the stream's codec parameters (its
  // description) in its header: each can explain itself alone.
  for (auto& r : rig.recorders) {
    for (const auto& c : r->closed) {
      auto rec = recover_segment(*rig.volume, c.segment_id);
      REQUIRE(rec.has_value());
      CHECK(rec->header.codec_parameters == std::vector<std::byte>(40, std::byte{0x42}));
    }
  }
}

TEST_CASE("power cut at random moments: every acknowledged frame survives, byte for byte", "[recording][crash]") {
  std::mt19937_64 rng(11);
  for (int iteration = 0; iteration < 25; ++iteration) {
    Rig rig;
    const std::uint64_t cut = 20 + rng() % 400;
    rig.disk.power_fail_after(cut);
    for (int i = 0; i < 60 && !rig.disk.powered_off(); ++i) rig.cycle();
    std::map<std::uint64_t, std::uint64_t> acked;
    for (auto& r : rig.recorders) acked[r->stream] = r->acked;
    rig.sched.reset();
    rig.disk.crash(/*lose_cache=*/true);

    auto vol = Volume::open(rig.disk);
    REQUIRE(vol.has_value());
    std::map<std::uint64_t, std::set<std::uint64_t>> found;
    for (const auto& [id, uses] : (*vol)->segments()) {
      auto rec = recover_segment(**vol, id, [&](const ScannedRecord& r) {
        CHECK(vigil::test::matches_script(r.header, r.payload));  // never garbage
        found[r.header.stream_id].insert(r.header.sequence);
      });
      if (!rec) continue;  // a segment whose header never became durable holds no acked frame
    }
    for (const auto& [stream, upto] : acked) {
      INFO("iteration " << iteration << " cut after " << cut << " commands, stream " << stream << " acked " << upto);
      for (std::uint64_t seq = 1; seq <= upto; ++seq) {
        if (!found[stream].count(seq)) {
          FAIL_CHECK("acknowledged frame " << seq << " lost");
          break;
        }
      }
    }
  }
}

namespace {

// Every acknowledged frame of every stream is on the durable image, byte for byte.
void check_acknowledged_frames_recover(Rig& rig, const std::string& what) {
  std::map<std::uint64_t, std::uint64_t> acked;
  for (auto& r : rig.recorders) acked[r->stream] = r->acked;
  rig.sched.reset();
  rig.disk.crash(/*lose_cache=*/true);
  auto vol = Volume::open(rig.disk);
  REQUIRE(vol.has_value());
  std::map<std::uint64_t, std::set<std::uint64_t>> found;
  for (const auto& [id, uses] : (*vol)->segments()) {
    (void)recover_segment(**vol, id, [&](const ScannedRecord& r) {
      CHECK(vigil::test::matches_script(r.header, r.payload));
      found[r.header.stream_id].insert(r.header.sequence);
    });
  }
  for (const auto& [stream, upto] : acked) {
    INFO(what << ", stream " << stream << " acked " << upto);
    for (std::uint64_t seq = 1; seq <= upto; ++seq) {
      if (!found[stream].count(seq)) {
        FAIL_CHECK("acknowledged frame " << seq << " is not on the device");
        break;
      }
    }
  }
}

}  // namespace

TEST_CASE("a failed write or flush: no acknowledgement covers the failed batch, and the stream refuses more",
          "[recording][fault]") {
  // Every command of a few cycles in turn: stream writes (chunked), the cycle's flush, and the
  // synchronous header write of a new segment.
  int hits = 0, header_failures = 0;
  for (std::uint64_t nth = 1; nth <= 40; ++nth) {
    Rig rig;
    for (int i = 0; i < 4; ++i) rig.cycle();
    std::map<std::uint64_t, std::uint64_t> acked_before;
    for (auto& r : rig.recorders) acked_before[r->stream] = r->acked;
    rig.disk.fail_io(nth, errc::io_error);
    for (int i = 0; i < 12; ++i) rig.cycle();
    int failed_streams = 0;
    for (auto& r : rig.recorders) {
      INFO("command " << nth << " failed, stream " << r->stream << " acked " << r->acked << " of " << r->next_seq - 1);
      if (!r->failed) {
        CHECK(r->rec->failed_at() == std::nullopt);
        CHECK(r->acked > acked_before[r->stream]);  // the other streams go on
        continue;
      }
      ++failed_streams;
      // The acknowledgement stopped where the stream failed and stays there.
      CHECK(*r->failed == r->acked);
      CHECK(r->rec->failed_at() == r->acked);
      CHECK(r->rec->durable_sequence() == r->acked);
      CHECK(r->acked < r->next_seq - 1);  // the failed batch's frames were accepted, never acknowledged
      CHECK(r->rec->failed_writes() == 1);
      // Every cycle after the failure (40 commands span fewer than five cycles of the twelve)
      // refused the sender's frames, and so does the stream now.
      CHECK(r->refused_after_failure >= 7);
      auto f = vigil::test::script_frame(r->next_seq, r->stream);
      auto more = r->rec->append(f.header, f.payload);
      REQUIRE_FALSE(more.has_value());
      CHECK(more.error() == errc::io_error);
      // Its segment was closed at the last durable frame, for the catalog.
      if (r->acked > 0) {
        REQUIRE_FALSE(r->closed.empty());
        CHECK(r->closed.back().last_sequence == r->acked);
      }
      CHECK_FALSE(r->rec->close().has_value());  // nothing left open
    }
    // A new segment's header write that fails wrote nothing: that stream goes on in another segment.
    if (failed_streams == 0) ++header_failures;
    hits += failed_streams;
    check_acknowledged_frames_recover(rig, "command " + std::to_string(nth) + " failed");
  }
  CHECK(header_failures < 10);
  CHECK(hits > 30);
}

TEST_CASE("a stream re-admitted at a higher rate takes more each cycle once its larger halves are in",
          "[recording][rerate]") {
  Rig rig;
  for (int i = 0; i < 5; ++i) rig.cycle();
  auto& grown = *rig.recorders[0];
  auto& other = *rig.recorders[1];
  // Not larger, or a batch that would not fit in an extent: refused, nothing changes.
  CHECK(grown.rec->grow(48 * 1024).error() == errc::invalid_argument);
  CHECK(grown.rec->grow(2 << 20).error() == errc::invalid_argument);
  REQUIRE(grown.rec->grow(160 * 1024).has_value());
  // Two seals bring both larger halves in; after that the 30 frames a cycle all fit.
  for (int i = 0; i < 3; ++i) rig.cycle();
  CHECK(grown.rec->memory_bytes() == 2 * 160 * 1024);
  const auto grown_refused = grown.rec->refused_frames();
  const auto other_refused = other.rec->refused_frames();
  const auto grown_acked = grown.acked, other_acked = other.acked;
  for (int i = 0; i < 10; ++i) rig.cycle();
  CHECK(grown.rec->refused_frames() == grown_refused);  // no longer policed
  CHECK(other.rec->refused_frames() > other_refused);   // still policed at 48 KiB a cycle
  CHECK(grown.acked - grown_acked == 300);              // every frame sent, durable
  CHECK(other.acked - other_acked < 200);
  CHECK(rig.sched->totals().misses == 0);
  check_acknowledged_frames_recover(rig, "after growing stream 1's buffer");
}

TEST_CASE("segments also close at a span of media time, before their size", "[recording][segment]") {
  // Script frames are 3600 pts apart: 60 frames span 216000.
  constexpr std::int64_t kSpan = 60 * 3600;
  Rig rig(nullptr, kSpan);
  for (int i = 0; i < 30; ++i) rig.cycle();
  for (auto& r : rig.recorders) {
    INFO("stream " << r->stream);
    REQUIRE(r->closed.size() >= 4);
    std::uint64_t expect = 1;
    for (const auto& c : r->closed) {
      CHECK(c.first_sequence == expect);  // still one run without a hole
      expect = c.last_sequence + 1;
      // Closed once a durable batch reached the span, where the next segment begins with a
      // keyframe; these streams fill their half every cycle, so no batch is cut before one and
      // the wait may last to twice the span (then mid-GOP), never longer.
      CHECK(c.end_pts - c.first_pts >= kSpan);
      CHECK(c.end_pts - c.first_pts < 2 * kSpan + 30 * 3600);
      CHECK(c.end_offset < (300 + 48) * 1024);  // by the size limit at the latest
    }
  }
  check_acknowledged_frames_recover(rig, "segments closed by time");
}

TEST_CASE("a full segment rotates at a keyframe: each segment starts with one, and its frames are all there",
          "[recording][segment]") {
  // By size and by time: either way the rotation falls inside a GOP (script frames: a keyframe
  // every 8) and the writer moves the GOP's frames into the old segment, not the new one, where
  // a reader starting at the first keyframe would never serve them. 4 frames a cycle (about a
  // quarter of a half): room in the next half for the frames cut off before the keyframe.
  for (const std::int64_t span : {std::int64_t{0}, std::int64_t{45 * 3600}}) {
    INFO("max_segment_pts " << span);
    Rig rig(nullptr, span);
    rig.frames_per_cycle = 4;
    for (int i = 0; i < 120; ++i) rig.cycle();
    for (auto& r : rig.recorders) {
      INFO("stream " << r->stream);
      REQUIRE(r->closed.size() >= 3);
      std::uint64_t expect = 1;
      for (const auto& c : r->closed) {
        INFO("segment " << c.segment_id);
        CHECK(c.first_sequence == expect);
        expect = c.last_sequence + 1;
        CHECK(c.frame_count == c.last_sequence - c.first_sequence + 1);
        REQUIRE(!c.gop_index.entries().empty());
        CHECK(c.gop_index.entries().front().sequence == c.first_sequence);  // its first frame is a keyframe
        // On the device too (what recovery and every reader see), record for record.
        std::vector<std::uint64_t> seqs;
        bool first_key = false;
        auto rec = recover_segment(*rig.volume, c.segment_id, [&](const ScannedRecord& f) {
          if (seqs.empty()) first_key = f.header.keyframe();
          CHECK(vigil::test::matches_script(f.header, f.payload));
          seqs.push_back(f.header.sequence);
        });
        REQUIRE(rec.has_value());
        CHECK(first_key);
        REQUIRE(seqs.size() == c.frame_count);
        CHECK(seqs.front() == c.first_sequence);
        CHECK(seqs.back() == c.last_sequence);
      }
      // The open segment (once any of it is durable) continues without a hole, from a keyframe.
      if (const auto open = r->rec->durable_view()) {
        CHECK(open->first_sequence == expect);
        REQUIRE(!open->gop_index.entries().empty());
        CHECK(open->gop_index.entries().front().sequence == open->first_sequence);
      }
    }
    check_acknowledged_frames_recover(rig, "keyframe rotation");
  }
}

TEST_CASE("a volume taken out of service ends its streams at their last durable frame", "[recording][fault]") {
  std::atomic<bool> failing{false};
  Rig rig(&failing);
  for (int i = 0; i < 4; ++i) rig.cycle();
  failing = true;
  for (int i = 0; i < 3; ++i) rig.cycle();
  for (auto& r : rig.recorders) {
    INFO("stream " << r->stream);
    REQUIRE(r->failed.has_value());
    CHECK(*r->failed == r->acked);
    CHECK(r->acked > 0);
    REQUIRE_FALSE(r->closed.empty());
    CHECK(r->closed.back().last_sequence == r->acked);  // durable frames go to the catalog
    auto f = vigil::test::script_frame(r->next_seq, r->stream);
    CHECK(r->rec->append(f.header, f.payload).error() == errc::io_error);
  }
  check_acknowledged_frames_recover(rig, "volume failing");
}

TEST_CASE("after a failed batch, recovery reads no unacknowledged frame and no empty segment is left",
          "[recording][fault]") {
  // Command by command over a few cycles: whatever failed, the volume afterwards holds every
  // acknowledged frame and nothing after it, and every segment on it has frames (an extent taken
  // by a segment that never got a durable frame is freed).
  for (std::uint64_t nth = 1; nth <= 40; ++nth) {
    Rig rig;
    for (int i = 0; i < 3; ++i) rig.cycle();
    rig.disk.fail_io(nth, errc::io_error);
    for (int i = 0; i < 6; ++i) rig.cycle();
    std::map<std::uint64_t, std::uint64_t> acked;
    std::set<std::uint64_t> failed;
    for (auto& r : rig.recorders) {
      acked[r->stream] = r->acked;
      if (r->failed) failed.insert(r->stream);
      if (r->failed) CHECK_FALSE(r->rec->close().has_value());
    }
    rig.sched.reset();
    auto vol = Volume::open(rig.disk);
    REQUIRE(vol.has_value());
    for (const auto& [id, uses] : (*vol)->segments()) {
      std::uint64_t frames = 0;
      auto rec = recover_segment(**vol, id, [&](const ScannedRecord& r) {
        ++frames;
        if (failed.count(r.header.stream_id)) {
          INFO("command " << nth << " failed; stream " << r.header.stream_id << " acked " << acked[r.header.stream_id]);
          CHECK(r.header.sequence <= acked[r.header.stream_id]);
        }
      });
      INFO("command " << nth << " failed; segment " << id);
      REQUIRE(rec.has_value());
      CHECK(frames > 0);
    }
  }
}

TEST_CASE("a refusal says why the half was full: the sender's rate, a write still pending, a segment that cannot start",
          "[recording][gaps]") {
  VirtualClock clock;
  SimulatedDisk disk(clock, {.size_bytes = 8 << 20});
  REQUIRE(Volume::format(disk, {.extent_bytes = 1 << 20}).has_value());
  auto volume = *Volume::open(disk);
  std::uint64_t next_segment = 100;
  RecordingStream rec(*volume, 1, {}, 1, 0, RecordingStreamOptions{.io_bytes = 16 * 1024},
                      [&] { return ++next_segment; }, {}, {}, {});
  std::uint64_t seq = 1;
  // The sender sends until a packet is refused.
  auto fill = [&] {
    for (;;) {
      auto f = vigil::test::script_frame(seq, 1);
      auto ok = rec.append(f.header, f.payload);
      if (!ok) return ok.error();
      ++seq;
    }
  };
  using Held = RecordingStream::Held;

  SECTION("the sender's rate, then the IO thread late with the previous write") {
    CHECK(fill() == errc::rate_exceeded);
    CHECK(rec.refused_because() == Held::no);  // more than a half within one cycle
    auto io = rec.prepare(1);                  // the half is taken; its write is in flight
    REQUIRE_FALSE(io.pieces.empty());
    CHECK(fill() == errc::rate_exceeded);
    CHECK(rec.refused_because() == Held::no);
    // The next cycle begins with that write unfinished (a deadline miss): this half stays.
    CHECK(std::string(rec.prepare(2).skip_reason) == "previous_write_pending");
    CHECK(fill() == errc::rate_exceeded);
    CHECK(rec.refused_because() == Held::write_pending);
    // Written at last; the next cycle takes the half again: refusals are the sender's again.
    rec.finished(1, {});
    REQUIRE_FALSE(rec.prepare(3).pieces.empty());
    CHECK(fill() == errc::rate_exceeded);
    CHECK(rec.refused_because() == Held::no);
  }
  SECTION("the segment cannot start: the volume is full") {
    while (volume->allocate_extent(999, 9, static_cast<std::uint32_t>(volume->free_extent_count())).has_value()) {}
    CHECK(fill() == errc::rate_exceeded);
    CHECK(std::string(rec.prepare(1).skip_reason) == "segment_failed");
    CHECK(fill() == errc::rate_exceeded);
    CHECK(rec.refused_because() == Held::segment_failed);
  }
}
