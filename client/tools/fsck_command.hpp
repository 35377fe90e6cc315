#pragma once
// `vigil fsck VOLUME [--repair]`: offline check of a volume (vigild must not be using it).
// Prints every problem with segment, stream and offsets; exits 0 when clean, 1 when data is
// damaged, 2 on usage errors, 3 when the volume cannot be opened.
#include <string>
#include <vector>

namespace vigil::client {

int fsck_main(const std::vector<std::string>& args);

}  // namespace vigil::client
