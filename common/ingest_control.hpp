#pragma once
// The control messages between vigild's camera manager and a `vigil ingest` worker (docs/
// protocol.md, "Pulled cameras"): one line each over the socket the worker inherits, so a camera
// URL with its password never appears on a command line.
//   vigild -> worker   start NAME URL RATE_BPS [GAP_REASON]
//                                                 record camera NAME from URL, declared at RATE_BPS
//                                                 (the camera's declared_rate_bps; 0: from the stream)
//                      stop NAME                     stop reading it, send what was read, end its stream
//   worker -> vigild   ended NAME EXIT_CODE [REASON] its session ended (exit codes as `vigil record`'s)
// NAME is a track label (common/track.hpp): a catalog camera name for its main stream, NAME/sub
// for its sub stream (the worker records that URL with role "sub"); URL has no spaces (both
// checked by the catalog); GAP_REASON
// and REASON are the rest of the line, any newline in them written as a space.
// Pure functions; any thread. Errors: parse returns nullopt for a line that is not a message.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vigil::ingest {

struct Start {
  std::string name, url, gap_reason;
  std::int64_t rate_bps = 0;  // the operator's declared rate (cameras.declared_rate_bps); 0: none
};
struct Stop {
  std::string name;
};
struct Ended {
  std::string name;
  int exit_code = 0;
  std::string reason;
};

// Each message as one line, ending in '\n'.
std::string format(const Start& m);
std::string format(const Stop& m);
std::string format(const Ended& m);

// LINE (without its '\n') as a message for the worker / for vigild.
struct Command {
  std::optional<Start> start;
  std::optional<Stop> stop;
};
std::optional<Command> parse_command(std::string_view line);
std::optional<Ended> parse_ended(std::string_view line);

// Splits complete lines off the front of BUFFER (bytes read so far); a partial line stays.
template <typename F>
void for_each_line(std::string& buffer, F&& f) {
  std::size_t from = 0;
  for (auto nl = buffer.find('\n'); nl != std::string::npos; nl = buffer.find('\n', from)) {
    f(std::string_view(buffer).substr(from, nl - from));
    from = nl + 1;
  }
  buffer.erase(0, from);
}

}  // namespace vigil::ingest
