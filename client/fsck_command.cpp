#include "client/fsck_command.hpp"

#include <iostream>

#include "storage/file_device.hpp"
#include "storage/fsck.hpp"
#include "storage/volume.hpp"

namespace vigil::client {

int fsck_main(const std::vector<std::string>& args) {
  std::string path;
  bool repair = false;
  for (const auto& a : args) {
    if (a == "--repair") {
      repair = true;
    } else if (a == "--help" || a == "-h") {
      std::cout << "Usage: vigil fsck VOLUME [--repair]\n\n"
                   "Verifies a volume offline: superblock, extent headers, segment headers and the CRC of\n"
                   "every record. --repair reclaims segments whose header is unreadable.\n"
                   "Exit: 0 clean, 1 damaged data found, 2 usage, 3 cannot open the volume.\n";
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "vigil fsck: unknown option " << a << "\n";
      return 2;
    } else if (path.empty()) {
      path = a;
    } else {
      std::cerr << "vigil fsck: one volume at a time\n";
      return 2;
    }
  }
  if (path.empty()) {
    std::cerr << "Usage: vigil fsck VOLUME [--repair]\n";
    return 2;
  }
  auto dev = storage::FileDevice::open(path);
  if (!dev) {
    std::cerr << "vigil fsck: cannot open " << path << ": " << dev.error().message() << "\n";
    return 3;
  }
  auto vol = storage::Volume::open(**dev);
  if (!vol) {
    std::cerr << "vigil fsck: " << path << " is not a readable Vigil volume: " << vol.error().message() << "\n";
    return 3;
  }
  auto report = storage::check_volume(**vol);
  if (!report) {
    std::cerr << "vigil fsck: reading " << path << " failed: " << report.error().message() << "\n";
    return 3;
  }
  for (const auto& p : report->problems) std::cout << p.describe() << "\n";
  std::cout << path << ": " << report->segments << " segments, " << report->records << " records, "
            << report->bytes << " bytes checked; " << report->serious() << " problem(s)";
  const std::size_t torn = report->problems.size() - report->serious();
  if (torn) std::cout << ", " << torn << " torn tail(s) from unclean stops";
  std::cout << "\n";
  if (repair && report->serious()) {
    auto fixed = storage::repair_volume(**vol, *report);
    if (!fixed) {
      std::cerr << "vigil fsck: repair failed: " << fixed.error().message() << "\n";
      return 1;
    }
    std::cout << "repair: reclaimed " << *fixed << " segment(s) with unreadable headers\n";
  }
  return report->serious() ? 1 : 0;
}

}  // namespace vigil::client
