#pragma once
// `vigil ingest --control-fd N`: an ingest worker (client/cli/ingest_worker.hpp) that vigild's
// camera manager starts; not meant to be run by hand.
#include <string>
#include <vector>

namespace vigil::client {

int ingest_main(const std::string& server, const std::string& token, const std::vector<std::string>& args);

}  // namespace vigil::client
