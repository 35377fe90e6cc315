#pragma once
// `vigil catalog rebuild --volume V [--volume V2 ...] --db URL`: the catalog rebuilt from the
// volumes alone (docs/durability.md, "Rebuilding the catalog"): volumes and disks registered,
// streams and cameras from the segment headers, segments with extents and GOP index, gaps for
// damage and for holes between streams. Offline (vigild must not be using the volumes);
// idempotent. Exits 0 done, 1 failed part-way, 2 usage, 3 a volume or the catalog cannot be used.
#include <string>
#include <vector>

namespace vigil::client {

int catalog_main(const std::vector<std::string>& args);

}  // namespace vigil::client
