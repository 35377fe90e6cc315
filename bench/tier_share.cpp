#include "bench/tier_share.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "admission/admission.hpp"
#include "admission/profiler.hpp"
#include "storage/background_broker.hpp"
#include "storage/cycle_scheduler.hpp"
#include "storage/freeblock_tier.hpp"
#include "storage/hdd_model.hpp"

using namespace vigil::storage;
using namespace vigil::admission;

namespace vigil::bench {
namespace {

constexpr std::uint64_t kBlock = 4096;

double s_of(Nanos t) { return std::chrono::duration<double>(t).count(); }

// A viewer of recorded video: each cycle one read of its rate, continuing in its own region.
class PlaybackStream final : public CycleStream {
 public:
  PlaybackStream(std::uint64_t offset, std::uint64_t region, std::size_t bytes)
      : offset_(offset), region_(region), buf_(bytes) {}
  StreamIo prepare(std::uint64_t) override {
    if (pos_ + buf_.size() > region_) pos_ = 0;
    const std::uint64_t at = offset_ + pos_;
    pos_ += buf_.size();
    return {.write = false, .pieces = {{at, buf_.span()}}};
  }
  void finished(std::uint64_t, vigil::Result<void>) override {}

 private:
  std::uint64_t offset_, region_, pos_ = 0;
  AlignedBuffer buf_;
};

}  // namespace

TierShareResult tier_share_run(const TierShareOptions& options) {
  const Nanos T = std::chrono::seconds(1);
  DiskProfile profile;
  {
    SimulatedHdd probe(hdd_preset("atlas10k"), kBlock);
    profile = profile_device(*probe.disk, probe.clock, {.quick = true, .seed = 1});
  }
  const ProfiledServiceModel service(profile);
  const AdmissionController adm(profile, {.policy = Policy::conservative, .cycle_s = s_of(T), .r_rt = 0.9});
  const Rate rate = Rate::from_Bps(options.stream_Bps);
  std::vector<StreamDemand> set;
  for (std::uint64_t id = 1;; ++id) {
    const StreamDemand d{.id = id, .write = false, .peak_rate = rate, .average_rate = rate};
    if (!adm.decide(set, d).admitted) break;
    set.push_back(d);
  }
  TierShareResult out;
  out.admissible = set.size();
  out.streams = static_cast<std::size_t>(std::floor(options.load * static_cast<double>(set.size())));

  SimulatedHdd hdd(hdd_preset("atlas10k"), kBlock);
  FreeblockTier tier(*hdd.model, kBlock,
                     {.rotational = options.rotational,
                      .prepend_max_bytes = options.prepend ? std::size_t{128 * 1024} : std::size_t{0}});
  const bool tiers = options.prepend || options.rotational;
  const auto chunk = std::max<std::size_t>(kBlock, static_cast<std::size_t>(profile.chunk_bytes()) / kBlock * kBlock);
  CycleScheduler sched(
      *hdd.disk, hdd.clock, service,
      {.cycle = T, .r_rt = 0.9, .chunk_bytes = chunk, .depth = 2, .background_budget = options.background_budget},
      &hdd.clock, {.model = hdd.model, .disk = hdd.disk.get(), .freeblock = tiers ? &tier : nullptr});
  const std::uint64_t cap = hdd.capacity / kBlock * kBlock;
  const std::uint64_t region = cap / std::max<std::size_t>(out.streams, 1) / kBlock * kBlock;
  const auto io_bytes = static_cast<std::size_t>(std::ceil(options.stream_Bps * s_of(T) / kBlock)) * kBlock;
  std::vector<std::unique_ptr<PlaybackStream>> streams;
  for (std::size_t s = 0; s < out.streams; ++s) {
    streams.push_back(std::make_unique<PlaybackStream>(s * region, region, io_bytes));
    sched.add_stream(s + 1, *streams.back(), hdd.clock.now());
  }
  BackgroundBroker broker(sched, chunk, kBlock, tiers ? &tier : nullptr);
  std::function<void()> epoch = [&] {
    // A whole-disk scrub, again as soon as it is done.
    auto id = broker.register_read(
        {{0, cap}}, [&](std::span<const std::byte> data, std::uint64_t) { out.scrub_bytes += data.size(); },
        [&](vigil::Result<void> r) {
          if (r) epoch();
        },
        false, BrokerOrder::any_order);
    if (!id) throw std::runtime_error("scrub task refused");
  };
  if (options.scrub) epoch();
  std::vector<Nanos> rt_done;
  sched.on_cycle = [&](const CycleReport& r) { rt_done.push_back(r.rt_done); };
  const Nanos start = hdd.clock.now();
  for (int c = 0; c < options.cycles; ++c) sched.run_cycle();
  out.elapsed_s = s_of(hdd.clock.now() - start);
  const auto& totals = sched.totals();
  out.cycles = totals.cycles;
  out.misses = totals.misses;
  out.free_late = totals.free_late;
  out.free_reads = totals.free_reads;
  out.prepend_reads = totals.prepend_reads;
  out.free_bytes = static_cast<double>(totals.free_bytes);
  out.prepend_bytes = static_cast<double>(totals.prepend_bytes);
  std::sort(rt_done.begin(), rt_done.end());
  if (!rt_done.empty()) {
    const std::size_t k =
        std::min(rt_done.size() - 1, static_cast<std::size_t>(0.99 * static_cast<double>(rt_done.size())));
    out.rt_done_p99_ms = s_of(rt_done[k]) * 1e3;
  }
  return out;
}

}  // namespace vigil::bench
