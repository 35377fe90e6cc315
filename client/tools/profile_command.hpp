#pragma once
// `vigil profile TARGET` (measure a disk: file, block device or sim:PRESET) and
// `vigil profile show FILE` (derived parameters). See admission/profiler.hpp.
#include <string>
#include <vector>

namespace vigil::client {

int profile_main(const std::vector<std::string>& args);

}  // namespace vigil::client
