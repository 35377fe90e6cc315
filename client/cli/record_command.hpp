#pragma once
// `vigil record --stream NAME INPUT`: demux INPUT with libavformat (never decode) and record its
// video stream into vigild over the wire protocol, keeping every packet until it is
// acknowledged as durable (the Xtream client proxy). See record_command.cpp for the options.
#include <atomic>
#include <ostream>
#include <string>
#include <vector>

namespace vigil::client {

int record_main(const std::string& server, const std::string& token, const std::vector<std::string>& args);

// One pulled camera, as an ingest worker records it (client/cli/ingest_worker.hpp): what
// `vigil record --stream NAME --url-fd N --gap-reason REASON` does, until STOP, saying everything
// to LOG. Returns `vigil record`'s exit code. Any thread; nothing escapes it.
struct PullArgs {
  std::string server, token;  // vigild's wire address and the recorder token
  std::string name, input, gap_reason;
  std::string role{};   // the camera's track: "main" (empty) or "sub"
  double rate_bps = 0;  // the operator's declared rate; 0: from the stream (rate_policy.hpp)
};
int record_pull(const PullArgs& pull, const std::atomic<bool>& stop, std::ostream& log);

}  // namespace vigil::client
