#include "server/disks/segment_fetch.hpp"

#include <chrono>
#include <future>
#include <memory>

#include "server/disks/disk_set.hpp"

namespace vigil::server {

std::optional<Result<ExtentBytes>> read_in_background(Disk& disk, const std::vector<storage::BrokerExtent>& extents,
                                                      std::stop_token stop) {
  // The blocks arrive in order on the IO thread, which only copies them.
  struct Read {
    std::vector<storage::BrokerExtent> extents;
    ExtentBytes bytes;
    std::size_t at = 0;
    std::promise<Result<void>> done;
  };
  auto read = std::make_shared<Read>();
  read->extents = extents;
  read->bytes.resize(extents.size());
  for (std::size_t i = 0; i < extents.size(); ++i) read->bytes[i].reserve(extents[i].bytes);
  auto finished = read->done.get_future();
  auto task = disk.io->broker().register_read(
      read->extents,
      [read](std::span<const std::byte> data, std::uint64_t) {
        while (read->at < read->extents.size() && read->bytes[read->at].size() >= read->extents[read->at].bytes)
          ++read->at;
        if (read->at < read->bytes.size())
          read->bytes[read->at].insert(read->bytes[read->at].end(), data.begin(), data.end());
      },
      [read](Result<void> r) { read->done.set_value(r); });
  if (!task) return Result<ExtentBytes>(task.error());
  while (finished.wait_for(std::chrono::milliseconds(200)) != std::future_status::ready) {
    if (stop.stop_requested()) {
      disk.io->broker().abort(*task);
      return std::nullopt;
    }
  }
  if (auto r = finished.get(); !r) return Result<ExtentBytes>(r.error());
  return Result<ExtentBytes>(std::move(read->bytes));
}

}  // namespace vigil::server
