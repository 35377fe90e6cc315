#pragma once
// The cycle scheduler: the one thread that drives one disk (docs/scheduler.md; thesis §2.4.1
// and chapter 4, seed 001 §10 for the order).
//
// Time is cut into cycles of length T. In every cycle each admitted stream gets exactly one
// stream IO of T·BR bytes (CycleStream::prepare), issued in one ascending sweep by device
// offset starting from where the head is (C-LOOK). Every IO — stream, interactive, best
// effort, background — is issued as chunks of chunk_bytes with at most `depth` in flight
// (Semi-preemptible IO); between chunks is a preemption point where the scheduler picks, in
// order:
//   1. a newly added stream's first IO (head of the queue: its start latency is one chunk
//      plus its own IO, independent of the number of streams);
//   2. an interactive request, if it fits in what is left of this cycle's interactive and
//      best-effort share (1 − r_RT)·T, or else if the slack test passes:
//        predicted(remaining stream IOs) + predicted(request) ≤ time left in the cycle
//      (or no stream work is left); otherwise it waits for a point where it passes;
//   3. the stream IO in progress, then the next in the sweep;
//      (an interactive request arriving while D commands are in flight wakes the IO thread out of
//      poll() — Device::wake — and takes one slot beyond D, within its share: pick_interactive);
//   4. best effort, within the (1 − r_RT)·T share and the slack test;
//   5. background, only when this cycle's stream IOs are all done, within a per-cycle budget
//      and only if its chunk is predicted to end before the cycle does.
// A stream IO still unfinished when its cycle ends is a deadline miss, recorded with the
// stream, the cycle and a cause, and finished first in the next cycle. The last chunk of a
// stream write is durable (RWF_DSYNC / FUA), so write-back never piles up behind a later
// interactive read. On the simulated hard disk the executor also does JIT-seek (waits out the
// predicted rotational delay minus an offset, preemptibly) and seek splitting.
//
// Time: a Clock; with a VirtualClock (simulated disk) idle waits jump the clock and requests
// carry their arrival time, so a run is deterministic. Thread: run_cycle()/run() and all
// callbacks on the IO thread; add_stream/remove_stream/submit from any thread.
// Errors: IO errors are values delivered to the stream or request; nothing here throws.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <vector>

#include "storage/device.hpp"
#include "storage/preemptibility_meter.hpp"
#include "storage/request_order.hpp"
#include "storage/stream_io.hpp"
#include "storage/stream_io_stats.hpp"
#include "storage/service_model.hpp"

namespace vigil::storage {

class FreeblockTier;
class HddModel;
class SimulatedDisk;

enum class IoClass { real_time, interactive, best_effort, background };
const char* io_class_name(IoClass c) noexcept;

struct IoOutcome {
  Result<void> result{};
  Nanos arrival{0}, started{0}, finished{0};
  Nanos waiting() const noexcept { return started - arrival; }
  Nanos response() const noexcept { return finished - arrival; }
};

// An IO outside the stream cycle. BUF must stay valid until DONE runs.
struct IoRequest {
  IoClass cls = IoClass::interactive;
  bool write = false;
  std::uint64_t offset = 0;
  std::span<std::byte> buf{};
  std::function<void(const IoOutcome&)> done{};
};

// The simulated hard disk's mechanics, for JIT-seek and seek splitting.
struct Mechanics {
  HddModel* model = nullptr;
  SimulatedDisk* disk = nullptr;
  bool jit_seek = false;
  Nanos jit_offset{1'000'000};              // 1 ms, as the thesis prototype
  std::uint32_t max_subseek_cylinders = 0;  // 0: never split
  // Tiers 2 and 3 of the background broker (storage/freeblock_tier.hpp): before a foreground
  // access that starts a new position, a read of wanted sectors inside its rotational latency
  // (tier 3), or else, before a stream read, the wanted blocks that end where it begins (tier 2).
  // Not owned; null: none. Needs MODEL and DISK.
  FreeblockTier* freeblock = nullptr;
};

struct SchedulerConfig {
  Nanos cycle{1'000'000'000};
  double r_rt = 0.9;  // real-time share; 1 − r_RT is for interactive + best effort
  std::size_t chunk_bytes = 256 * 1024;
  std::size_t depth = 1;                 // D: chunks in flight
  bool preemptible = true;               // false: the npIO baseline (an IO's chunks run back to back)
  Nanos background_budget{200'000'000};  // per cycle
  bool durable_last_write_chunk = true;
  // Set: a cycle's stream IOs may go in FSATF order by this predictor — nearest insertion over
  // the frozen cycle from the head (docs/latency-map.md) — instead of one ascending sweep
  // (C-LOOK); e.g. a MapPredictor over the disk's learned map whose fallback for unlearned
  // cells is optimistic (LBN distance), so that the order explores them as seed 004 does.
  // The cycle takes that order only when its path, predicted by STREAM_ORDER_BOUND (cells are
  // an IO's first command; further chunks at the service model's transfer time), fits the
  // real-time share r_RT·T, with nothing carried over from a late cycle; otherwise C-LOOK, whose
  // guarantee is admission's. STREAM_ORDER_BOUND must be an upper bound: the same map with a
  // worst case (full stroke + a rotation + transfer) for unlearned cells; null = STREAM_ORDER.
  // Not owned; both outlive the scheduler. Interactive, best-effort and background requests
  // are not affected.
  const ServiceTimePredictor* stream_order = nullptr;
  const ServiceTimePredictor* stream_order_bound = nullptr;
};

// cpu_starved: the IO thread waited for a CPU this cycle at least as long as the cycle was late
// by (CycleScheduler::cpu_wait): the device was not the slow part.
enum class MissCause { overload, interactive, slow_io, device_error, cpu_starved };
const char* miss_cause_name(MissCause c) noexcept;

struct DeadlineMiss {
  std::uint64_t cycle = 0;
  std::uint64_t stream = 0;
  MissCause cause = MissCause::slow_io;
};

struct CycleReport {
  std::uint64_t cycle = 0;
  Nanos start{0};
  Nanos predicted_rt{0};   // Σ predicted stream IO time at the cycle's start
  Nanos busy{0};           // device time of all commands completed in this cycle
  Nanos rt_busy{0};        // of which stream IO (the online model check compares it with predicted_rt)
  Nanos flush_busy{0};     // of which the flush that makes durable stream writes durable (not in rt_busy)
  Nanos cpu_wait{0};       // the IO thread's time runnable but not running (CycleScheduler::cpu_wait; 0 unmeasured)
  Nanos rt_done{0};        // when the last stream IO of the cycle finished, from the start
  Nanos slack{0};          // T − rt_done (negative: the cycle overran)
  double utilisation = 0;  // busy / T
  std::uint32_t stream_ios = 0, skipped = 0, misses = 0, preemptions = 0;
  bool stream_order_used = false;  // the stream IOs went in SchedulerConfig::stream_order's order
  std::uint32_t interactive = 0, best_effort = 0, background_chunks = 0;
  std::uint32_t free_reads = 0;     // tier 3: reads inside a foreground command's rotational latency
  std::uint32_t prepend_reads = 0;  // tier 2: wanted blocks read just ahead of a stream read
  Nanos free_busy{0};               // their device time (in busy; costs no foreground command anything)
  Nanos interactive_wait_max{0}, interactive_response_max{0};
};

struct SchedulerTotals {
  std::uint64_t cycles = 0, stream_ios = 0, misses = 0, preemptions = 0;
  std::uint64_t interactive = 0, best_effort = 0, background_chunks = 0, commands = 0;
  std::uint64_t stream_bytes = 0, other_bytes = 0;
  std::uint64_t free_reads = 0, free_bytes = 0;        // tier 3
  std::uint64_t prepend_reads = 0, prepend_bytes = 0;  // tier 2
  // Tier 3's self-check: foreground commands that completed later than the plan before them
  // predicted (0 on the exact model; on a real drive, seed 000's misprediction cost).
  std::uint64_t free_late = 0;
};

// One command as issued, for traces and determinism checks.
struct CommandTrace {
  IoClass cls;
  bool write;
  bool seek;
  bool durable;
  std::uint64_t offset;
  std::size_t bytes;
  Nanos issued, completed;
};

class CycleScheduler {
 public:
  // VCLOCK: the virtual clock when DEVICE is simulated (idle waits advance it), else null.
  CycleScheduler(Device& device, Clock& clock, const ServiceModel& model, SchedulerConfig config,
                 VirtualClock* vclock = nullptr, Mechanics mechanics = {});
  ~CycleScheduler();
  CycleScheduler(const CycleScheduler&) = delete;
  CycleScheduler& operator=(const CycleScheduler&) = delete;

  // --- any thread. ARRIVAL (virtual time only; real time uses now) is when the request
  // reaches the disk's scheduler.
  void add_stream(std::uint64_t id, CycleStream& stream, std::optional<Nanos> arrival = {});
  // The stream gets no more IOs; ON_IDLE runs on the IO thread once no IO of it is queued or
  // in flight (its last write acknowledged), after which the stream object may be destroyed.
  // ID must not be added again before ON_IDLE ran (its IO in flight is matched by id).
  void remove_stream(std::uint64_t id, std::function<void()> on_idle = {});
  void submit(IoRequest request, std::optional<Nanos> arrival = {});
  // Work that must run on the IO thread because it uses the volume's allocation (retention's
  // reclaim writes extent headers synchronously): it runs in a cycle's slack, once the cycle's
  // stream IO is done and nothing is in flight, one task per idle moment. A task still queued
  // when the scheduler is destroyed is destroyed unrun (its owner sees a broken promise).
  void post_task(std::function<void()> task);

  // --- IO thread ---
  CycleReport run_cycle();
  void run(std::stop_token stop);  // cycles until STOP (real time); wakes on requests

  const SchedulerConfig& config() const noexcept { return config_; }
  const PreemptibilityMeter& meter() const noexcept { return meter_; }
  // The most recent misses (at most kMissHistory; totals().misses counts all of them).
  static constexpr std::size_t kMissHistory = 4096;
  const std::deque<DeadlineMiss>& misses() const noexcept { return misses_; }
  const SchedulerTotals& totals() const noexcept { return totals_; }
  // Arrival → first IO complete, per stream added with add_stream.
  const std::map<std::uint64_t, Nanos>& start_latencies() const noexcept { return start_latency_; }
  // Per running stream: its measured bytes and device time per cycle (stream_io_stats.hpp).
  const std::map<std::uint64_t, StreamIoStats>& stream_stats() const noexcept { return io_stats_; }
  std::function<void(const CycleReport&)> on_cycle;     // after each cycle
  std::function<void(const CommandTrace&)> on_command;  // after each command completes
  // After each request (submit) completes, before its DONE: its class, whether it wrote, and its
  // outcome (arrival → completion is the queue-to-completion latency /metrics observes). Runs on
  // the IO thread: it must only touch atomics.
  std::function<void(IoClass, bool write, const IoOutcome&)> on_request;
  // The IO thread's cumulative run-queue delay (time runnable, waiting for a CPU), read on the IO
  // thread; unset: not measured. A late cycle whose delay covers its lateness is cpu_starved.
  std::function<Nanos()> cpu_wait;

 private:
  struct Job;
  struct Arrival;
  void admit_arrivals();
  Job* pick();
  Job* pick_interactive();  // with D in flight: an interactive request's extra slot
  bool slack_test(const Job& request) const;
  Nanos interactive_share() const;  // (1 − r_RT)·T
  bool within_share(const Job& request) const;
  Nanos predicted_remaining_rt() const;
  Nanos predict_job(const Job& j) const;
  // Issues the next command of J (a sub-seek, after a JIT wait, or a chunk). False if the
  // JIT wait was cut short by an arrival (J stays queued).
  bool issue(Job& j);
  // Tier 3: issues a free read ahead of J's next chunk when one fits (Mechanics::freeblock).
  bool issue_free_read(const Job& j);
  // Tier 2: issues the wanted blocks that end where J's next chunk (a stream read) begins.
  bool issue_prepend(Job& j);
  void submit_command(Job& j, bool seek);
  void complete(Job& j, CommandTrace t, Result<std::size_t> r);
  void finish_job(Job& j);
  // Waits (preemptibly) until UNTIL or an arrival; returns false if woken early.
  bool wait_idle(Nanos until);
  void end_cycle();
  std::deque<Job*>& queue_of(const Job& j);
  Job* make_job(IoClass cls);
  Job* stream_job(std::uint64_t id, CycleStream& stream, StreamIo io, Nanos arrival);
  bool write_work_queued() const;
  void order_by_predictor(std::vector<Job*>& fresh);

  Device& device_;
  Clock& clock_;
  const ServiceModel& model_;
  SchedulerConfig config_;
  VirtualClock* vclock_;
  Mechanics mech_;

  std::mutex inbox_mu_;
  std::condition_variable inbox_cv_;
  std::multimap<Nanos, std::unique_ptr<Arrival>> inbox_;
  // Earliest arrival in the inbox (max when empty): lets the IO thread skip the lock when
  // nothing is due, which is almost every chunk boundary.
  std::atomic<Nanos::rep> next_arrival_{std::numeric_limits<Nanos::rep>::max()};
  std::map<std::uint64_t, std::uint64_t> joined_;            // stream → the cycle its first IO was in
  std::map<std::uint64_t, std::function<void()>> retiring_;  // removed streams with IO still open
  void retire_if_idle(std::uint64_t stream);

  std::map<std::uint64_t, CycleStream*> streams_;
  std::map<const Job*, std::unique_ptr<Job>> jobs_;  // every job until its last command completes
  // Jobs with commands still to issue, by class; the job in progress is at its queue's front.
  std::deque<Job*> head_, rt_, interactive_, best_effort_, background_;
  Job* current_ = nullptr;        // the job whose command was issued last
  std::vector<Job*> flush_wait_;  // durable writes done, waiting for the cycle's flush
  Job* flush_job_ = nullptr;      // the flush in progress
  Job* positioned_ = nullptr;     // the job the head is positioned on (no access cost)
  std::size_t rt_open_ = 0;       // stream IOs not yet complete
  std::uint64_t cycle_ = 0;
  Nanos cycle_start_{0}, deadline_{0};
  std::uint64_t head_offset_ = 0;  // where the last command ended (C-LOOK start)
  Nanos last_completion_{0};
  std::size_t in_flight_ = 0;
  std::size_t interactive_in_flight_ = 0;  // of which interactive (pick_interactive's extra slot)
  Nanos be_used_{0}, interactive_used_{0}, bg_used_{0};
  Nanos share_used_{0};  // predicted cost of the interactive + best-effort requests started this cycle
  CycleReport report_{};
  PreemptibilityMeter meter_;
  std::deque<DeadlineMiss> misses_;
  void record_miss(const DeadlineMiss& m);
  MissCause miss_cause() const noexcept;
  bool cpu_starved() const noexcept;
  Nanos cycle_cpu_wait_{0};                  // cpu_wait() at the cycle's start
  mutable std::optional<bool> cpu_starved_;  // decided once per cycle, at its first miss
  std::atomic<bool> stopping_{false};
  SchedulerTotals totals_;
  std::map<std::uint64_t, Nanos> start_latency_;
  std::map<std::uint64_t, StreamIoStats> io_stats_;  // of the streams in streams_
  std::deque<std::function<void()>> tasks_;          // post_task, in order
  struct FreePlanned {
    const Job* job;
    std::uint64_t offset;  // the chunk that follows a free read
    Nanos end;             // when the plan said it completes
  };
  std::deque<FreePlanned> free_planned_;  // in submit order (commands complete in order)
};

}  // namespace vigil::storage
