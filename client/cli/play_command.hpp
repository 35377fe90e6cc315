#pragma once
// `vigil play --stream NAME --from TIME [--to TIME] -o FILE|-`: play a recorded range out of
// vigild over the wire protocol and remux it (libavformat, no re-encoding) to MP4, MKV, MPEG-TS
// or standard output. See play_command.cpp for the options.
#include <string>
#include <vector>

namespace vigil::client {

int play_main(const std::string& server, const std::string& token, const std::vector<std::string>& args);

}  // namespace vigil::client
