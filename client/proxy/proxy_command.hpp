#pragma once
// `vigil proxy --upstream HOST:PORT[,HOST:PORT...] [--listen ADDR:PORT] [--cache-mb N]`: the
// playback proxy between many viewers and vigild nodes (docs/proxy.md). Runs until SIGINT or
// SIGTERM. See proxy_command.cpp for the options.
#include <string>
#include <vector>

namespace vigil::client {

// TOKEN: the token `vigil` was given (--token, --token-file, VIGIL_TOKEN): what --nodes asks the
// nodes' list with; viewers' requests carry their own.
int proxy_main(const std::vector<std::string>& args, const std::string& token = {});

}  // namespace vigil::client
