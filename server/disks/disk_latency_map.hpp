#pragma once
// A disk's latency map in vigild (docs/latency-map.md "In vigild"): on a rotating disk the IO
// thread learns seed 004's map from its own completed commands and orders each cycle's stream IOs
// by it (FSATF-MAP over the frozen cycle, C-LOOK where the map's bound does not fit:
// storage/latency_map_learner.hpp). The map is kept next to the volume (latency_map_path): loaded
// at start — a damaged file, or one of another device or region size, is refused with a log line
// and the map relearned — saved every save_every by a thread of its own from a copy the IO thread
// hands over, and once more after the IO thread stopped (clean shutdown).
//
// Whether a disk gets a map (LatencyMapMode): auto = when its device rotates, per sysfs
// queue/rotational, except a paravirtual disk (virtio_blk, Xen's vbd), whose flag is its driver's
// default and says nothing of the medium (this machine's virtio disk says 1; `vigil bench
// latency-map`'s device part found no distance dependence on it). on / off force it.
// A cell is an extent (the volume's extent_bytes): a recording stream advances through its
// extent, so a finer cell would be a new cell every few cycles and never predict anything.
// Thread: built and finished on the thread that owns the DiskIoThread; the learner on the IO
// thread; the saver on its own. Errors: start-up values and log lines; nothing throws past open().
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "server/core/vigild_metrics.hpp"
#include "server/disks/volume_startup.hpp"
#include "storage/latency_map_learner.hpp"
#include "storage/service_model.hpp"

namespace vigil::server {

enum class LatencyMapMode { automatic, on, off };
std::optional<LatencyMapMode> latency_map_mode(std::string_view name);  // auto | on | off

struct LatencyMapSettings {
  LatencyMapMode mode = LatencyMapMode::off;
  std::chrono::seconds save_every{600};
};

// Whether the device holding PATH (a block device, or the file system a file is on) rotates, and
// the one line that says how that was decided.
struct MediaProbe {
  bool rotational = false;
  std::string why;
};
MediaProbe probe_media(const std::filesystem::path& path);

class DiskLatencyMap {
 public:
  // The map of VOLUME, or null where SETTINGS and the device say off (logged either way). MODEL
  // and CHUNK_BYTES are the IO thread's: the bound for an unlearned cell is MODEL's time for one
  // chunk (admission's worst case). MODEL and METRICS (optional) must outlive this.
  static std::unique_ptr<DiskLatencyMap> open(const OpenVolume& volume, const LatencyMapSettings& settings,
                                              const storage::ServiceModel& model, std::size_t chunk_bytes,
                                              DiskMetrics* metrics);
  ~DiskLatencyMap();  // stops the saver if running; saves nothing (finish() does)
  DiskLatencyMap(const DiskLatencyMap&) = delete;
  DiskLatencyMap& operator=(const DiskLatencyMap&) = delete;

  storage::LatencyMapLearner& learner() noexcept { return *learner_; }
  const std::filesystem::path& file() const noexcept { return file_; }

  // The saver thread: a copy from the IO thread every save_every, written next to the volume.
  void start_saving();
  // Once the IO thread has stopped: stops the saver and saves the live map.
  void finish();

 private:
  DiskLatencyMap(std::filesystem::path volume, std::filesystem::path file, std::chrono::seconds save_every,
                 std::unique_ptr<storage::LatencyMapLearner> learner, DiskMetrics* metrics);
  void save(std::span<const std::byte> bytes, std::string_view when);
  void stop_saver();

  std::string volume_;
  std::filesystem::path file_;
  std::chrono::seconds save_every_;
  std::unique_ptr<storage::LatencyMapLearner> learner_;
  DiskMetrics* metrics_;
  std::mutex stop_mu_;
  std::condition_variable_any stop_cv_;
  std::jthread saver_;
};

}  // namespace vigil::server
