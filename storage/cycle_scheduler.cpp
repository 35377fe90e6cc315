#include "storage/cycle_scheduler.hpp"

#include <algorithm>
#include <cmath>

#include "storage/freeblock_tier.hpp"
#include "storage/hdd_model.hpp"
#include "storage/simulated_disk.hpp"

namespace vigil::storage {

const char* io_class_name(IoClass c) noexcept {
  switch (c) {
    case IoClass::real_time: return "real_time";
    case IoClass::interactive: return "interactive";
    case IoClass::best_effort: return "best_effort";
    case IoClass::background: return "background";
  }
  return "unknown";
}

const char* miss_cause_name(MissCause c) noexcept {
  switch (c) {
    case MissCause::overload: return "overload";
    case MissCause::interactive: return "interactive";
    case MissCause::slow_io: return "slow_io";
    case MissCause::device_error: return "device_error";
    case MissCause::cpu_starved: return "cpu_starved";
  }
  return "unknown";
}

struct CycleScheduler::Job {
  IoClass cls = IoClass::real_time;
  std::uint64_t stream = 0;
  CycleStream* owner = nullptr;
  std::uint64_t cycle = 0;
  bool first_io = false;  // a new stream's first IO (head of the queue)
  bool write = false;
  std::vector<IoPiece> pieces;
  std::size_t piece = 0;
  std::uint64_t pos = 0;        // bytes of pieces[piece] already issued
  std::uint64_t remaining = 0;  // bytes not yet issued
  std::uint64_t bytes = 0;
  std::uint32_t in_flight = 0;
  std::vector<std::uint64_t> subseeks;  // planned sub-seek targets (simulated HDD)
  bool jit_done = false;
  bool failed = false, missed = false, started = false;
  bool durable = false;   // stream write to be acknowledged: finished() after a flush
  bool is_flush = false;  // the cycle's flush for the durable writes
  boost::system::error_code error;
  Nanos arrival{0}, started_at{0};
  Nanos device{0};  // device time of its commands so far
  IoRequest request;

  bool issued_all() const noexcept { return remaining == 0 && subseeks.empty() && !is_flush; }
  bool done() const noexcept { return issued_all() && in_flight == 0; }
  std::uint64_t next_offset() const noexcept { return piece < pieces.size() ? pieces[piece].offset + pos : 0; }
};

struct CycleScheduler::Arrival {
  enum class Kind { add, remove, request, task } kind = Kind::request;
  std::uint64_t id = 0;
  CycleStream* stream = nullptr;
  IoRequest request{};
  std::function<void()> on_idle{};
  std::function<void()> task{};
};

CycleScheduler::CycleScheduler(Device& device, Clock& clock, const ServiceModel& model, SchedulerConfig config,
                               VirtualClock* vclock, Mechanics mechanics)
    : device_(device), clock_(clock), model_(model), config_(config), vclock_(vclock), mech_(mechanics) {
  config_.depth = std::clamp<std::size_t>(config_.depth, 1, device_.max_in_flight());
  const std::size_t block = device_.info().logical_block_bytes;
  config_.chunk_bytes = std::max(block, config_.chunk_bytes / block * block);
  last_completion_ = clock_.now();
}

CycleScheduler::~CycleScheduler() {
  // Commands in flight reference jobs: let them finish before the jobs go away.
  while (in_flight_ > 0) device_.poll(1);
}

// --- control plane (any thread) ---

void CycleScheduler::add_stream(std::uint64_t id, CycleStream& stream, std::optional<Nanos> arrival) {
  auto a = std::make_unique<Arrival>(Arrival{Arrival::Kind::add, id, &stream, {}});
  {
    std::lock_guard lock(inbox_mu_);
    const Nanos at = arrival.value_or(clock_.now());
    inbox_.emplace(at, std::move(a));
    next_arrival_ = inbox_.begin()->first.count();
  }
  inbox_cv_.notify_one();
}

void CycleScheduler::remove_stream(std::uint64_t id, std::function<void()> on_idle) {
  auto a = std::make_unique<Arrival>(Arrival{Arrival::Kind::remove, id, nullptr, {}, std::move(on_idle)});
  {
    std::lock_guard lock(inbox_mu_);
    inbox_.emplace(clock_.now(), std::move(a));
    next_arrival_ = inbox_.begin()->first.count();
  }
  inbox_cv_.notify_one();
}

void CycleScheduler::submit(IoRequest request, std::optional<Nanos> arrival) {
  const bool interactive = request.cls == IoClass::interactive || request.cls == IoClass::real_time;
  auto a = std::make_unique<Arrival>(Arrival{Arrival::Kind::request, 0, nullptr, std::move(request)});
  {
    std::lock_guard lock(inbox_mu_);
    const Nanos at = arrival.value_or(clock_.now());
    inbox_.emplace(at, std::move(a));
    next_arrival_ = inbox_.begin()->first.count();
  }
  inbox_cv_.notify_one();
  // The IO thread may be blocked in poll() behind a flush or D chunks: an operator's request
  // should not wait for them to complete before it is even seen (run_cycle gives it a slot).
  if (interactive) device_.wake();
}

void CycleScheduler::post_task(std::function<void()> task) {
  auto a = std::make_unique<Arrival>(Arrival{Arrival::Kind::task, 0, nullptr, {}, {}, std::move(task)});
  {
    std::lock_guard lock(inbox_mu_);
    inbox_.emplace(clock_.now(), std::move(a));
    next_arrival_ = inbox_.begin()->first.count();
  }
  inbox_cv_.notify_one();
}

// --- IO thread ---

CycleScheduler::Job* CycleScheduler::make_job(IoClass cls) {
  auto owned = std::make_unique<Job>();
  Job* j = owned.get();
  j->cls = cls;
  jobs_.emplace(j, std::move(owned));
  return j;
}

CycleScheduler::Job* CycleScheduler::stream_job(std::uint64_t id, CycleStream& stream, StreamIo io, Nanos arrival) {
  Job* j = make_job(IoClass::real_time);
  j->stream = id;
  j->owner = &stream;
  j->cycle = cycle_;
  j->write = io.write;
  j->durable = io.write && io.durable;
  j->bytes = j->remaining = io.bytes();
  j->pieces = std::move(io.pieces);
  j->arrival = arrival;
  ++rt_open_;
  return j;
}

namespace {
// C-LOOK: offsets at or after the head first, ascending, then from the lowest.
auto clook_order(std::uint64_t head) {
  return [head](const auto* a, const auto* b) {
    return std::pair{a->next_offset() < head, a->next_offset()} < std::pair{b->next_offset() < head, b->next_offset()};
  };
}
}  // namespace

std::deque<CycleScheduler::Job*>& CycleScheduler::queue_of(const Job& j) {
  switch (j.cls) {
    case IoClass::real_time: return j.first_io ? head_ : rt_;
    case IoClass::interactive: return interactive_;
    case IoClass::best_effort: return best_effort_;
    case IoClass::background: return background_;
  }
  return rt_;
}

void CycleScheduler::admit_arrivals() {
  if (clock_.now().count() < next_arrival_.load(std::memory_order_acquire)) return;
  std::vector<std::pair<Nanos, std::unique_ptr<Arrival>>> due;
  {
    std::lock_guard lock(inbox_mu_);
    const Nanos now = clock_.now();
    while (!inbox_.empty() && inbox_.begin()->first <= now) {
      due.emplace_back(inbox_.begin()->first, std::move(inbox_.begin()->second));
      inbox_.erase(inbox_.begin());
    }
    next_arrival_ = inbox_.empty() ? std::numeric_limits<Nanos::rep>::max() : inbox_.begin()->first.count();
  }
  for (auto& [at, a] : due) {
    switch (a->kind) {
      case Arrival::Kind::add: {
        streams_[a->id] = a->stream;
        joined_[a->id] = cycle_;  // its first IO counts as this cycle's
        StreamIo io = a->stream->prepare(cycle_);
        if (io.pieces.empty()) break;  // nothing to read or write yet: it joins the next cycle
        Job* j = stream_job(a->id, *a->stream, std::move(io), at);
        j->first_io = true;
        head_.push_back(j);
        // Work the cycle's prediction did not have at its start: counted in, or a start-up burst
        // (a thousand first IOs mid-cycle) reads as a model thirty times too optimistic. (At the
        // cycle's start the prediction is set afresh after this, first IOs included.)
        report_.predicted_rt += predict_job(*j);
        // Many streams arriving at once (a restart, cameras reconnecting) are one sweep too:
        // the not-yet-started first IOs in C-LOOK order from the head.
        const auto first = std::find_if(head_.begin(), head_.end(), [](const Job* h) { return !h->started; });
        std::stable_sort(first, head_.end(), clook_order(head_offset_));
        break;
      }
      case Arrival::Kind::remove:
        streams_.erase(a->id);
        joined_.erase(a->id);
        io_stats_.erase(a->id);
        if (a->on_idle) {
          retiring_[a->id] = std::move(a->on_idle);
          retire_if_idle(a->id);
        }
        break;
      case Arrival::Kind::task: tasks_.push_back(std::move(a->task)); break;
      case Arrival::Kind::request: {
        IoRequest& r = a->request;
        if (r.buf.empty() || r.buf.size() % device_.info().logical_block_bytes) {
          if (r.done) r.done(IoOutcome{errc::invalid_argument, at, at, clock_.now()});
          break;
        }
        Job* j = make_job(r.cls == IoClass::real_time ? IoClass::interactive : r.cls);
        j->write = r.write;
        j->bytes = j->remaining = r.buf.size();
        j->pieces = {{r.offset, r.buf}};
        j->arrival = at;
        j->request = std::move(r);
        queue_of(*j).push_back(j);
        break;
      }
    }
  }
}

void CycleScheduler::retire_if_idle(std::uint64_t stream) {
  auto it = retiring_.find(stream);
  if (it == retiring_.end()) return;
  for (const auto& [ptr, job] : jobs_) {
    if (job->cls == IoClass::real_time && !job->is_flush && job->stream == stream) return;  // still busy
  }
  auto done = std::move(it->second);
  retiring_.erase(it);
  done();
}

Nanos CycleScheduler::predict_job(const Job& j) const {
  if (j.remaining == 0) return Nanos(0);
  const Nanos full = model_.predict(j.write, j.next_offset(), j.remaining);
  if (positioned_ != &j) return full;
  return full - model_.predict(j.write, j.next_offset(), 0);  // the head is there: transfer only
}

Nanos CycleScheduler::predicted_remaining_rt() const {
  Nanos sum{0};
  for (const Job* j : head_) sum += predict_job(*j);
  for (const Job* j : rt_) sum += predict_job(*j);
  return sum;
}

bool CycleScheduler::slack_test(const Job& request) const {
  if (rt_open_ == 0) return true;  // no stream work left in this cycle to endanger
  const Nanos left = deadline_ - clock_.now();
  return predicted_remaining_rt() + predict_job(request) <= left;
}

Nanos CycleScheduler::interactive_share() const {
  return Nanos(static_cast<std::int64_t>((1.0 - config_.r_rt) * static_cast<double>(config_.cycle.count())));
}

// Admission keeps the predicted stream work within r_RT·T, so the other (1 − r_RT)·T of every
// cycle is the interactive and best-effort share: a request that fits in what is left of it is
// served at the next chunk boundary without the slack test. Without this, a device slower
// today than its profile makes the slack test fail for the rest of the cycle and an operator's
// read waits behind every remaining stream IO (hundreds of ms) instead of one chunk.
// The share is spent by the predicted cost of each request admitted, as the streams' r_RT·T is:
// a measured duration would charge a 64 KiB read that completed with chunks stalled beside it
// (a 228 ms device stall in a trace) for the whole stall and close the share for the cycle.
bool CycleScheduler::within_share(const Job& request) const {
  return share_used_ + predict_job(request) <= interactive_share();
}

// With D commands in flight an interactive request may take one more slot: it goes to the
// device at once, ahead of the stream chunks not yet issued, instead of waiting for an
// in-flight chunk or the cycle's flush to complete (a device with parallel queues — a file on
// an SSD, a virtual disk — serves it beside them).
CycleScheduler::Job* CycleScheduler::pick_interactive() {
  // Not for the npIO baseline, and one interactive command at a time: the slot is for a request
  // that arrived while the IO thread waited, not a second queue of interactive work.
  if (!config_.preemptible || interactive_in_flight_ > 0) return nullptr;
  if (in_flight_ > config_.depth || in_flight_ >= device_.max_in_flight()) return nullptr;  // the slot is taken
  // Only a request not yet started (a long one, a media route's 4 MiB piece, goes on at D),
  // and only within the interactive share: the slack test does not see the chunks in flight,
  // so beyond the share the request waits for a chunk boundary as before.
  if (!interactive_.empty() && !interactive_.front()->started && within_share(*interactive_.front())) {
    return interactive_.front();
  }
  return nullptr;
}

// FSATF over the frozen cycle by config_.stream_order, kept only where its path, predicted by
// the upper bound, fits the real-time share (an order that explores unlearned cells is then
// safe: at worst it takes the bound). Where it does not fit, nearest insertion again with
// unlearned cells dearer, by λ of the way from optimistic to the bound, the smallest λ whose
// order fits (λ = 1 keeps to learned cells: the order with the best guarantee). Without this a
// map that knows only the sweep's own cells could never leave the sweep at a load where every
// fully exploring order is too dear in the bound, and so would never learn: the blended order
// explores as much as the proven slack pays for.
namespace {
// A + λ·(B − A): the order's predictor and the bound agree on learned cells (the same map), so
// this moves only the cost of an unlearned cell from optimistic (λ = 0) to the bound (λ = 1).
class BlendedPredictor final : public ServiceTimePredictor {
 public:
  BlendedPredictor(const ServiceTimePredictor& a, const ServiceTimePredictor& b, double lambda) noexcept
      : a_(a), b_(b), lambda_(lambda) {}
  Nanos predict(std::uint64_t from, const PendingIo& to) const noexcept override {
    const Nanos a = a_.predict(from, to), b = b_.predict(from, to);
    return a + Nanos(static_cast<Nanos::rep>(lambda_ * static_cast<double>((b - a).count())));
  }

 private:
  const ServiceTimePredictor& a_;
  const ServiceTimePredictor& b_;
  double lambda_;
};
}  // namespace

void CycleScheduler::order_by_predictor(std::vector<Job*>& fresh) {
  const ServiceTimePredictor& bound = config_.stream_order_bound ? *config_.stream_order_bound : *config_.stream_order;
  std::vector<PendingIo> ios;
  ios.reserve(fresh.size());
  for (const Job* j : fresh) {
    ios.push_back(
        {j->next_offset(), static_cast<std::uint32_t>(std::min<std::uint64_t>(j->remaining, UINT32_MAX)), {}});
  }
  // The map's cells are first commands (positioning + one chunk); an IO's further chunks follow
  // without positioning, at the service model's transfer time.
  Nanos rest{0};
  for (const Job* j : fresh) {
    if (j->remaining <= config_.chunk_bytes) continue;
    const std::uint64_t more = j->remaining - config_.chunk_bytes;
    rest += model_.predict(j->write, j->next_offset(), more) - model_.predict(j->write, j->next_offset(), 0);
  }
  const auto share = Nanos(static_cast<Nanos::rep>(static_cast<double>(config_.cycle.count()) * config_.r_rt));
  const auto fits = [&](const std::vector<std::size_t>& o) {
    return predicted_path(head_offset_, ios, o, bound) + rest <= share;
  };
  std::vector<std::size_t> order = order_nearest_insertion(head_offset_, ios, *config_.stream_order);
  if (!fits(order)) {
    if (&bound == config_.stream_order) return;
    // The smallest λ whose order fits, to within 1/8: the most exploring order the bound allows.
    std::vector<std::size_t> fitting = order_nearest_insertion(head_offset_, ios, bound);
    if (!fits(fitting)) return;
    double lo = 0, hi = 1;
    for (int step = 0; step < 3; ++step) {
      const double mid = (lo + hi) / 2;
      order = order_nearest_insertion(head_offset_, ios, BlendedPredictor(*config_.stream_order, bound, mid));
      if (fits(order)) {
        hi = mid;
        fitting = std::move(order);
      } else {
        lo = mid;
      }
    }
    order = std::move(fitting);
  }
  std::vector<Job*> ordered;
  ordered.reserve(fresh.size());
  for (std::size_t i : order) ordered.push_back(fresh[i]);
  fresh = std::move(ordered);
  report_.stream_order_used = true;
}

CycleScheduler::Job* CycleScheduler::pick() {
  if (current_ && !current_->issued_all()) {
    // The npIO baseline: an IO's commands run back to back, nothing preempts them.
    if (!config_.preemptible) return current_;
    // Interactive and best-effort IOs are short and already admitted by the slack test.
    if (current_->cls == IoClass::interactive || current_->cls == IoClass::best_effort) return current_;
  }
  if (!head_.empty()) return head_.front();
  if (!interactive_.empty() && (within_share(*interactive_.front()) || slack_test(*interactive_.front()))) {
    return interactive_.front();
  }
  // One flush for all durable writes done so far, once no more of this sweep's writes wait.
  if (!flush_wait_.empty() && !flush_job_ && !write_work_queued()) {
    flush_job_ = make_job(IoClass::real_time);
    flush_job_->is_flush = true;
    return flush_job_;
  }
  if (!rt_.empty()) return rt_.front();
  const Nanos now = clock_.now();
  if (!best_effort_.empty() && interactive_used_ + be_used_ < interactive_share() &&
      slack_test(*best_effort_.front())) {
    return best_effort_.front();
  }
  if (!background_.empty() && rt_open_ == 0 && bg_used_ < config_.background_budget) {
    // Background goes chunk by chunk, each only if predicted to end inside this cycle: it
    // uses slack and never causes a miss.
    const Job& b = *background_.front();
    const std::uint64_t chunk = std::min<std::uint64_t>(config_.chunk_bytes, b.remaining);
    const Nanos t = model_.predict(b.write, b.next_offset(), chunk);
    if (now + t <= deadline_) return background_.front();
  }
  return nullptr;
}

bool CycleScheduler::write_work_queued() const {
  for (const auto* q : {&head_, &rt_}) {
    for (const Job* j : *q) {
      if (j->write) return true;
    }
  }
  return false;
}

bool CycleScheduler::issue(Job& j) {
  if (j.is_flush) {
    if (j.started) return true;  // already submitted; wait for it
    j.started = true;
    j.started_at = clock_.now();
    submit_command(j, false);
    return true;
  }
  if (!j.started) {
    j.started = true;
    j.started_at = clock_.now();
    if (j.cls == IoClass::interactive || j.cls == IoClass::best_effort) share_used_ += predict_job(j);
  }
  if (mech_.model && positioned_ != &j && j.remaining > 0 && in_flight_ == 0) {
    if (j.subseeks.empty()) {
      // Seek splitting (thesis §4.2.3): a seek longer than the maximum sub-seek distance is
      // done as equal sub-seeks with a preemption point between them. Planned afresh at every
      // access, so an IO resuming after a preemption splits its seek back too.
      const auto from = static_cast<std::int64_t>(mech_.model->head_cylinder());
      const auto to = static_cast<std::int64_t>(mech_.model->cylinder_of(j.next_offset()));
      const std::uint64_t dist = static_cast<std::uint64_t>(std::llabs(to - from));
      const std::uint64_t n = mech_.max_subseek_cylinders && mech_.disk
                                  ? (dist + mech_.max_subseek_cylinders - 1) / mech_.max_subseek_cylinders
                                  : 1;
      // Only where the rotational delay hides the split's extra cost (thesis §4.2.3: "if the
      // JIT-seek slack is at least the split overhead"); otherwise splitting costs throughput.
      const auto part = static_cast<std::uint32_t>(dist / std::max<std::uint64_t>(n, 1));
      const Nanos extra = static_cast<std::int64_t>(n) * mech_.model->seek_time(part) +
                          static_cast<std::int64_t>(n - 1) * mech_.model->geometry().command_overhead -
                          mech_.model->seek_time(static_cast<std::uint32_t>(dist));
      if (n > 1 && extra + mech_.jit_offset <= mech_.model->predicted_rotational_delay(j.next_offset(), clock_.now())) {
        for (std::uint64_t k = 1; k < n; ++k) {
          const auto cyl = from + (to - from) * static_cast<std::int64_t>(k) / static_cast<std::int64_t>(n);
          j.subseeks.push_back(mech_.model->offset_of_cylinder(static_cast<std::uint32_t>(cyl)));
        }
      }
    }
    if (!j.subseeks.empty()) {
      submit_command(j, /*seek=*/true);
      return true;
    }
  }
  // A free read (tier 3) or a prepended one (tier 2) takes the rotational latency JIT-seek would
  // wait out: one or the other. Planned behind the commands in flight too (the simulated disk's
  // model is already where they leave it; the disk is free at busy_until).
  if (mech_.freeblock && mech_.disk && positioned_ != &j && j.remaining > 0 && j.subseeks.empty() &&
      j.cls != IoClass::background && !j.jit_done && (issue_free_read(j) || issue_prepend(j))) {
    j.jit_done = true;
  }
  if (mech_.model && positioned_ != &j && j.remaining > 0 && in_flight_ == 0) {
    if (mech_.jit_seek && !j.jit_done) {
      // JIT-seek (thesis §4.2.2): start the command so the head arrives just before the data,
      // waiting out the rotational delay (less a safety offset) in a preemptible idle wait.
      const Nanos now = clock_.now();
      const Nanos delay = mech_.model->predicted_rotational_delay(j.next_offset(), now) - mech_.jit_offset;
      if (delay > Nanos(0) && !wait_idle(now + delay)) return false;  // something arrived: re-pick
      j.jit_done = true;
    }
  }
  submit_command(j, /*seek=*/false);
  return true;
}

bool CycleScheduler::issue_free_read(const Job& j) {
  // The chunk submit_command issues next, in HddModel::predict's terms or not at all: a read that
  // continues the read-ahead, or a buffered write, has no rotational latency to fill, and a
  // pending write-back would make the plan's prediction wrong.
  const IoPiece& p = j.pieces[j.piece];
  const auto size = static_cast<std::size_t>(std::min<std::uint64_t>(config_.chunk_bytes, p.buf.size() - j.pos));
  const std::uint64_t offset = p.offset + j.pos;
  const Nanos now = clock_.now();
  const Nanos free_at = mech_.disk->busy_until();  // after the commands in flight
  const bool durable = j.write && j.remaining == size && config_.durable_last_write_chunk;
  if (j.write ? !durable || mech_.model->write_back_pending(free_at) : mech_.model->continues_read_ahead(offset)) {
    return false;
  }
  const auto read = mech_.freeblock->plan(mech_.model->head_position(), free_at, offset, size);
  if (!read) return false;
  if (in_flight_ == 0 && now > last_completion_) meter_.idle(now - last_completion_);
  const auto buf = mech_.freeblock->buffer(read->bytes);
  auto done = [this, r = *read, issued = now](Result<std::size_t> result) {
    const Nanos at = clock_.now();
    const Nanos duration = at - std::max(issued, last_completion_);
    meter_.command(duration);
    report_.busy += duration;
    report_.free_busy += duration;
    last_completion_ = at;
    --in_flight_;
    if (!result) return;  // nothing delivered: the sectors stay wanted, tier 1 reads them
    ++report_.free_reads;
    ++totals_.free_reads;
    totals_.free_bytes += r.bytes;
    mech_.freeblock->delivered(r.offset, r.bytes);
    if (on_command) on_command({IoClass::background, false, false, false, r.offset, r.bytes, issued, at});
  };
  if (!mech_.disk->submit_read(read->offset, buf, std::move(done))) return false;
  free_planned_.push_back({&j, offset, read->foreground_end});
  ++in_flight_;
  ++totals_.commands;
  return true;
}

bool CycleScheduler::issue_prepend(Job& j) {
  if (j.cls != IoClass::real_time || j.write) return false;
  const std::uint64_t offset = j.next_offset();
  if (mech_.model->continues_read_ahead(offset)) return false;  // no positioning to share
  const auto run = mech_.freeblock->prepend(offset);            // not a structured binding: clang 14 cannot capture one
  const std::uint64_t first = run.first;
  const std::size_t bytes = run.second;
  if (bytes == 0) return false;
  // What the run adds: its transfer (the positioning is the stream read's anyway, and the read
  // then continues the drive's read-ahead). Charged to the background budget, within the slack.
  const Nanos now = clock_.now();
  const Nanos cost(static_cast<std::int64_t>(static_cast<double>(bytes) / mech_.model->media_rate(first) * 1e9));
  if (bg_used_ + cost > config_.background_budget || predicted_remaining_rt() + cost > deadline_ - now) return false;
  if (in_flight_ == 0 && now > last_completion_) meter_.idle(now - last_completion_);
  const auto buf = mech_.freeblock->buffer(bytes);
  auto done = [this, &j, first, bytes, cost, issued = now](Result<std::size_t> result) {
    const Nanos at = clock_.now();
    const Nanos duration = at - std::max(issued, last_completion_);
    meter_.command(duration);
    report_.busy += duration;
    // The positioning in it is the stream read's: stream time, as the model predicted it.
    const Nanos transfer = std::min(duration, cost);
    bg_used_ += transfer;
    report_.rt_busy += duration - transfer;
    j.device += duration - transfer;
    last_completion_ = at;
    --in_flight_;
    if (!result) return;  // the blocks stay wanted
    ++report_.prepend_reads;
    ++totals_.prepend_reads;
    totals_.prepend_bytes += bytes;
    mech_.freeblock->delivered(first, bytes, /*prepended=*/true);
    if (on_command) on_command({IoClass::background, false, false, false, first, bytes, issued, at});
  };
  if (!mech_.disk->submit_read(first, buf, std::move(done))) return false;
  ++in_flight_;
  ++totals_.commands;
  return true;
}

void CycleScheduler::submit_command(Job& j, bool seek) {
  const Nanos now = clock_.now();
  if (in_flight_ == 0 && now > last_completion_) meter_.idle(now - last_completion_);
  CommandTrace t{j.cls, j.write, seek, false, 0, 0, now, now};
  Result<void> submitted;
  if (j.is_flush) {
    submitted = device_.submit_flush([this, &j, t](Result<std::size_t> r) { complete(j, t, r); });
  } else if (seek) {
    t.offset = j.subseeks.front();
    j.subseeks.erase(j.subseeks.begin());
    submitted = mech_.disk->submit_seek(t.offset, [this, &j, t](Result<std::size_t> r) { complete(j, t, r); });
    positioned_ = nullptr;
  } else {
    IoPiece& p = j.pieces[j.piece];
    const std::size_t size =
        static_cast<std::size_t>(std::min<std::uint64_t>(config_.chunk_bytes, p.buf.size() - j.pos));
    const bool last = j.remaining == size;
    t.offset = p.offset + j.pos;
    t.bytes = size;
    t.durable = j.write && last && config_.durable_last_write_chunk;
    auto buf = p.buf.subspan(static_cast<std::size_t>(j.pos), size);
    auto done = [this, &j, t](Result<std::size_t> r) { complete(j, t, r); };
    // The last chunk of a write is durable so the device's write-back cannot pile up behind a
    // later interactive read (thesis §4.2.1, the write case).
    submitted = j.write ? device_.submit_write(t.offset, buf, t.durable, std::move(done))
                        : device_.submit_read(t.offset, buf, std::move(done));
    j.pos += size;
    j.remaining -= size;
    if (j.pos == p.buf.size()) {
      ++j.piece;
      j.pos = 0;
    }
    positioned_ = &j;
    head_offset_ = t.offset + size;
    j.jit_done = false;
  }
  if (!j.is_flush) current_ = &j;
  ++j.in_flight;
  ++in_flight_;
  if (j.cls == IoClass::interactive) ++interactive_in_flight_;
  ++totals_.commands;
  if (!j.is_flush && j.issued_all()) {
    auto& q = queue_of(j);
    q.erase(std::find(q.begin(), q.end(), &j));
  }
  if (!submitted) complete(j, t, submitted.error());  // refused by the device: an IO error for this job
}

void CycleScheduler::complete(Job& j, CommandTrace t, Result<std::size_t> r) {
  const Nanos now = clock_.now();
  // Commands run one at a time in order: this one occupied the device from when the previous
  // one completed (or from its issue, if the device was idle) until now.
  const Nanos duration = now - std::max(t.issued, last_completion_);
  meter_.command(duration);
  report_.busy += duration;
  last_completion_ = now;
  --in_flight_;
  --j.in_flight;
  if (j.cls == IoClass::interactive) --interactive_in_flight_;
  if (!free_planned_.empty() && free_planned_.front().job == &j && free_planned_.front().offset == t.offset) {
    if (now > free_planned_.front().end) ++totals_.free_late;
    free_planned_.pop_front();
  }
  if (!r) {
    j.failed = true;
    j.error = r.error();
  }
  if (j.is_flush) {
    report_.flush_busy += duration;  // the profile predicts transfers, not flushes: kept apart
  } else if (j.cls == IoClass::real_time) {
    report_.rt_busy += duration;
    j.device += duration;
  } else if (j.cls == IoClass::background) {
    bg_used_ += duration;
    ++report_.background_chunks;
    ++totals_.background_chunks;
  } else if (j.cls == IoClass::interactive) {
    interactive_used_ += duration;
  } else if (j.cls == IoClass::best_effort) {
    be_used_ += duration;
  }
  if (on_command) {
    t.completed = now;
    on_command(t);
  }
  if (j.is_flush) {
    // Every durable write that completed before the flush is now on stable storage.
    auto waiting = std::move(flush_wait_);
    flush_wait_.clear();
    flush_job_ = nullptr;
    for (Job* w : waiting) {
      if (!r) {
        w->failed = true;
        w->error = r.error();
      }
      finish_job(*w);
    }
    jobs_.erase(&j);
    return;
  }
  if (j.done()) {
    // Issued in time but its data landed after the cycle's end: the stream's buffer half was
    // late — a miss like an IO never finished. (The flush that follows durable writes is the
    // cycle's own work, outside the stream IO the deadline is about.)
    if (j.cls == IoClass::real_time && !j.first_io && j.cycle == cycle_ && !j.missed && !j.failed &&
        clock_.now() > deadline_) {
      j.missed = true;
      record_miss({j.cycle, j.stream, miss_cause()});
    }
    if (j.durable && !j.failed) {
      flush_wait_.push_back(&j);  // acknowledged after the cycle's flush
      if (current_ == &j) current_ = nullptr;
    } else {
      finish_job(j);
    }
  }
}

void CycleScheduler::finish_job(Job& j) {
  const Nanos now = clock_.now();
  Result<void> result;
  if (j.failed) result = j.error;
  if (j.cls == IoClass::real_time) {
    --rt_open_;
    ++totals_.stream_ios;
    totals_.stream_bytes += j.bytes;
    if (j.cycle == cycle_ && !j.first_io) {
      ++report_.stream_ios;
      report_.rt_done = std::max(report_.rt_done, now - cycle_start_);
    }
    if (j.first_io) start_latency_[j.stream] = now - j.arrival;
    // A stream's first IO is out of the cycle (head of the queue, its own seek): not typical.
    if (!j.first_io && !j.failed && streams_.contains(j.stream)) {
      io_stats_[j.stream].add(static_cast<double>(j.bytes), std::chrono::duration<double>(j.device).count());
    }
    if (j.failed && !j.missed) {
      j.missed = true;
      record_miss({j.cycle, j.stream, MissCause::device_error});
    }
    j.owner->finished(j.cycle, result);
  } else {
    totals_.other_bytes += j.bytes;
    IoOutcome out{result, j.arrival, j.started_at, now};
    if (j.cls == IoClass::interactive) {
      ++report_.interactive;
      ++totals_.interactive;
      report_.interactive_wait_max = std::max(report_.interactive_wait_max, out.waiting());
      report_.interactive_response_max = std::max(report_.interactive_response_max, out.response());
    } else if (j.cls == IoClass::best_effort) {
      ++report_.best_effort;
      ++totals_.best_effort;
    }
    if (on_request) on_request(j.cls, j.request.write, out);
    if (j.request.done) j.request.done(out);
  }
  if (current_ == &j) current_ = nullptr;
  if (positioned_ == &j) positioned_ = nullptr;
  const bool stream_io = j.cls == IoClass::real_time;
  const std::uint64_t stream = j.stream;
  jobs_.erase(&j);
  if (stream_io && !retiring_.empty()) retire_if_idle(stream);
}

bool CycleScheduler::wait_idle(Nanos until) {
  const Nanos now = clock_.now();
  if (until <= now) return true;
  if (vclock_) {
    Nanos next = until;
    {
      std::lock_guard lock(inbox_mu_);
      if (!inbox_.empty()) next = std::min(next, inbox_.begin()->first);
    }
    vclock_->advance_to(next);
    return next >= until;
  }
  // Real time: sleep on the inbox, so a request ends the wait at once.
  std::unique_lock lock(inbox_mu_);
  const auto tp =
      std::chrono::steady_clock::time_point(std::chrono::duration_cast<std::chrono::steady_clock::duration>(until));
  const bool woke = inbox_cv_.wait_until(lock, tp, [&] { return !inbox_.empty() || stopping_.load(); });
  return !woke;
}

CycleReport CycleScheduler::run_cycle() {
  ++cycle_;
  cycle_start_ = clock_.now();
  deadline_ = cycle_start_ + config_.cycle;
  report_ = CycleReport{};
  report_.cycle = cycle_;
  report_.start = cycle_start_;
  be_used_ = interactive_used_ = bg_used_ = share_used_ = Nanos(0);
  cycle_cpu_wait_ = cpu_wait ? cpu_wait() : Nanos(0);
  cpu_starved_.reset();
  admit_arrivals();

  // This cycle's stream IOs, one per stream, in one ascending sweep from the head (C-LOOK), or
  // in FSATF order by config_.stream_order.
  // IOs carried over from a missed cycle stay in front.
  std::vector<Job*> fresh;
  for (auto& [id, s] : streams_) {
    if (joined_[id] == cycle_) continue;  // added at this cycle's start: its first IO is this cycle's
    StreamIo io = s->prepare(cycle_);
    if (io.pieces.empty()) {
      ++report_.skipped;
      continue;
    }
    fresh.push_back(stream_job(id, *s, std::move(io), cycle_start_));
  }
  std::sort(fresh.begin(), fresh.end(), clook_order(head_offset_));
  if (config_.stream_order && rt_.empty() && !fresh.empty()) order_by_predictor(fresh);
  rt_.insert(rt_.end(), fresh.begin(), fresh.end());
  report_.predicted_rt = predicted_remaining_rt();

  while (true) {
    admit_arrivals();
    if (clock_.now() >= deadline_ || (stopping_.load() && in_flight_ == 0)) break;
    if (Job* j = in_flight_ < config_.depth ? pick() : pick_interactive()) {
      if (current_ && current_ != j && current_->cls == IoClass::real_time && current_->started &&
          !current_->issued_all()) {
        ++report_.preemptions;  // a stream IO gives way at a chunk boundary
        ++totals_.preemptions;
      }
      issue(*j);
      continue;
    }
    if (in_flight_ > 0) {
      device_.poll(1);
      continue;
    }
    if (!tasks_.empty() && rt_open_ == 0) {
      // The cycle's stream IO is done and the device idle: its slack serves maintenance.
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      task();
      continue;
    }
    wait_idle(deadline_);
  }
  end_cycle();
  return report_;
}

void CycleScheduler::record_miss(const DeadlineMiss& m) {
  misses_.push_back(m);
  if (misses_.size() > kMissHistory) misses_.pop_front();
  ++report_.misses;
  ++totals_.misses;
}

// Why a stream IO of this cycle is late: more stream work was queued than a cycle holds,
// interactive work took more than its share, or the device was slower than predicted.
MissCause CycleScheduler::miss_cause() const noexcept {
  const Nanos T = config_.cycle;
  const Nanos share = Nanos(static_cast<std::int64_t>((1.0 - config_.r_rt) * static_cast<double>(T.count())));
  return report_.predicted_rt > T               ? MissCause::overload
         : interactive_used_ + be_used_ > share ? MissCause::interactive
         : cpu_starved()                        ? MissCause::cpu_starved
                                                : MissCause::slow_io;
}

// Starved when the time the IO thread spent runnable without a CPU this cycle is at least how
// late the cycle is: what was left of its stream IO (predicted) or how far past the deadline it
// ran. Without that wait the IO would have been in time; the device was not the slow part.
bool CycleScheduler::cpu_starved() const noexcept {
  if (!cpu_wait) return false;
  if (!cpu_starved_) {
    const Nanos waited = cpu_wait() - cycle_cpu_wait_;
    const Nanos late = std::max(clock_.now() - deadline_, predicted_remaining_rt());
    cpu_starved_ = waited > Nanos(0) && waited >= late;
  }
  return *cpu_starved_;
}

void CycleScheduler::end_cycle() {
  const Nanos T = config_.cycle;
  for (auto& [ptr, owned] : jobs_) {
    Job& j = *owned;
    if (j.cls != IoClass::real_time || j.is_flush || j.first_io || j.missed || j.cycle > cycle_) continue;
    // Still open at the cycle's end: a deadline miss, never silent. Why: more stream work was
    // queued than a cycle holds, interactive work took more than its share, or the device was
    // slower than predicted.
    j.missed = true;
    record_miss({j.cycle, j.stream, j.failed ? MissCause::device_error : miss_cause()});
  }
  if (report_.misses) report_.rt_done = std::max(report_.rt_done, clock_.now() - cycle_start_);
  if (cpu_wait) report_.cpu_wait = cpu_wait() - cycle_cpu_wait_;
  report_.slack = T - report_.rt_done;
  report_.utilisation = static_cast<double>(report_.busy.count()) / static_cast<double>(T.count());
  ++totals_.cycles;
  if (on_cycle) on_cycle(report_);
}

void CycleScheduler::run(std::stop_token stop) {
  std::stop_callback wake(stop, [this] {
    std::lock_guard lock(inbox_mu_);
    stopping_ = true;
    inbox_cv_.notify_all();
  });
  while (!stop.stop_requested()) run_cycle();
}

}  // namespace vigil::storage
