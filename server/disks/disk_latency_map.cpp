#include "server/disks/disk_latency_map.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <fstream>

#include "common/log.hpp"
#include "storage/latency_map.hpp"

namespace vigil::server {
namespace {

namespace fs = std::filesystem;

// Paravirtual block drivers: their queue/rotational is the driver's default, not the medium's.
bool paravirtual(std::string_view driver) { return driver == "virtio_blk" || driver == "vbd"; }

// How long the saver waits for the IO thread's copy: a few cycles of the longest cycle allowed.
constexpr std::chrono::seconds kHandoverTimeout{120};

}  // namespace

std::optional<LatencyMapMode> latency_map_mode(std::string_view name) {
  if (name == "auto") return LatencyMapMode::automatic;
  if (name == "on") return LatencyMapMode::on;
  if (name == "off") return LatencyMapMode::off;
  return std::nullopt;
}

MediaProbe probe_media(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {false, "cannot stat the volume"};
  const dev_t dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
  const std::string id = std::to_string(major(dev)) + ":" + std::to_string(minor(dev));
  std::error_code ec;
  fs::path sys = fs::canonical("/sys/dev/block/" + id, ec);
  if (ec) return {false, "no block device " + id + " in sysfs (a virtual or network file system)"};
  if (!fs::exists(sys / "queue")) sys = sys.parent_path();  // a partition: its disk has the queue
  std::ifstream in(sys / "queue" / "rotational");
  int rotational = -1;
  if (!(in >> rotational)) return {false, "no queue/rotational for " + sys.filename().string()};
  const std::string disk = sys.filename().string();
  const std::string driver = fs::read_symlink(sys / "device" / "driver", ec).filename().string();
  if (rotational == 1 && paravirtual(driver)) {
    return {false, disk + " says queue/rotational = 1, but it is a " + driver +
                       " disk, whose flag is its driver's default, not the medium's"};
  }
  return {rotational == 1, disk + " says queue/rotational = " + std::to_string(rotational)};
}

std::unique_ptr<DiskLatencyMap> DiskLatencyMap::open(const OpenVolume& volume, const LatencyMapSettings& settings,
                                                     const storage::ServiceModel& model, std::size_t chunk_bytes,
                                                     DiskMetrics* metrics) {
  const std::string name = volume.path.string();
  if (settings.mode == LatencyMapMode::off) {
    log::info("latency map off (--latency-map off)", {{"volume", name}});
    if (metrics) metrics->latency_map_enabled(false, 0);
    return nullptr;
  }
  const MediaProbe media = probe_media(volume.path);
  if (settings.mode == LatencyMapMode::automatic && !media.rotational) {
    log::info(
        "latency map off: the device does not rotate, so a map learns nothing a C-LOOK sweep does not have "
        "(--latency-map on forces it)",
        {{"volume", name}, {"why", media.why}});
    if (metrics) metrics->latency_map_enabled(false, 0);
    return nullptr;
  }
  const std::uint64_t device_bytes = volume.device->info().size_bytes;
  const std::uint64_t region_bytes = volume.volume->extent_bytes();
  const fs::path file = storage::latency_map_path(volume.path);
  auto loaded = storage::LatencyMap::load(file, device_bytes, region_bytes);
  std::size_t loaded_cells = 0;
  storage::LatencyMap map(device_bytes, region_bytes);
  if (loaded) {
    loaded_cells = loaded->learned_cells();
    map = std::move(*loaded);
    log::info("latency map loaded", {{"volume", name}, {"file", file.string()}, {"cells", loaded_cells}});
  } else if (loaded.error() == errc::not_found) {
    log::info("latency map: none saved yet, learning from scratch", {{"volume", name}, {"file", file.string()}});
  } else {
    log::warn("latency map refused, learning it again from scratch",
              {{"volume", name},
               {"file", file.string()},
               {"error", loaded.error().message()},
               {"why", loaded.error() == errc::invalid_argument
                           ? std::string("learned on another device or region size")
                           : std::string("damaged or unreadable")}});
  }
  // Unlearned cells: for the bound, the model's access + one chunk (admission's worst case); for
  // the order, half of that plus the LBN distance's share of it, so that nearest insertion tries
  // them rather than a learned cell it already knows to be slow.
  const storage::Nanos access = model.predict(false, 0, chunk_bytes);
  const double ns_per_byte =
      device_bytes == 0 ? 0 : static_cast<double>(access.count()) / static_cast<double>(device_bytes);
  auto learner = std::make_unique<storage::LatencyMapLearner>(
      std::move(map), std::make_unique<storage::LbnDistancePredictor>(access / 2, ns_per_byte),
      std::make_unique<storage::ServiceModelPredictor>(model, chunk_bytes));
  log::info("latency map on: stream IOs go in FSATF-MAP order where the map's bound fits the cycle",
            {{"volume", name},
             {"why", settings.mode == LatencyMapMode::on ? std::string("--latency-map on") : media.why},
             {"region_bytes", region_bytes},
             {"save_every_s", settings.save_every.count()}});
  if (metrics) metrics->latency_map_enabled(true, loaded_cells);
  return std::unique_ptr<DiskLatencyMap>(
      new DiskLatencyMap(volume.path, file, settings.save_every, std::move(learner), metrics));
}

DiskLatencyMap::DiskLatencyMap(fs::path volume, fs::path file, std::chrono::seconds save_every,
                               std::unique_ptr<storage::LatencyMapLearner> learner, DiskMetrics* metrics)
    : volume_(volume.string()),
      file_(std::move(file)),
      save_every_(save_every),
      learner_(std::move(learner)),
      metrics_(metrics) {}

DiskLatencyMap::~DiskLatencyMap() { stop_saver(); }

void DiskLatencyMap::start_saving() {
  if (save_every_.count() <= 0) return;
  saver_ = std::jthread([this](std::stop_token st) {
    while (true) {
      {
        std::unique_lock lock(stop_mu_);
        if (stop_cv_.wait_for(lock, st, save_every_, [] { return false; }); st.stop_requested()) return;
      }
      if (auto bytes = learner_->snapshot(kHandoverTimeout, st)) {
        save(*bytes, "periodic");
      } else if (!st.stop_requested()) {
        log::warn("latency map not saved: the IO thread ended no cycle to hand over a copy", {{"volume", volume_}});
      }
    }
  });
}

void DiskLatencyMap::stop_saver() {
  if (!saver_.joinable()) return;
  saver_.request_stop();
  saver_.join();
}

void DiskLatencyMap::finish() {
  stop_saver();
  save(learner_->map().serialize(), "shutdown");
}

void DiskLatencyMap::save(std::span<const std::byte> bytes, std::string_view when) {
  if (auto r = storage::LatencyMap::save_bytes(file_, bytes); !r) {
    log::warn("latency map not saved", {{"volume", volume_}, {"file", file_.string()}, {"error", r.error().message()}});
    return;
  }
  if (metrics_) metrics_->latency_map_saved();
  log::info("latency map saved", {{"volume", volume_},
                                  {"file", file_.string()},
                                  {"cells", storage::LatencyMap::cells_in(bytes)},
                                  {"when", when}});
}

}  // namespace vigil::server
