#pragma once
// `vigil record --stream NAME INPUT`: demux INPUT with libavformat (never decode) and record its
// video stream into vigild over the wire protocol, keeping every packet until it is
// acknowledged as durable (the Xtream client proxy). See record_command.cpp for the options.
#include <string>
#include <vector>

namespace vigil::client {

int record_main(const std::string& server, const std::string& token, const std::vector<std::string>& args);

}  // namespace vigil::client
