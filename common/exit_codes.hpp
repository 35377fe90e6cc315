#pragma once
// The exit codes of every `vigil` command (README documents them): the CLI, the proxy and the
// tools return these and nothing else, so a script tells "vigild is down" from "refused" alike
// for every command. Header only: constants, no errors.

namespace vigil::exit_code {

inline constexpr int kOk = 0;
inline constexpr int kFailed = 1;       // the command ran and did not succeed (no such camera, problems found)
inline constexpr int kUsage = 2;        // bad arguments: nothing was done
inline constexpr int kUnreachable = 3;  // vigild, its catalog or the volume cannot be reached or used
inline constexpr int kRefused = 4;  // refused: by admission (with the rate that would fit), or the token lacks the role
inline constexpr int kNothing = 5;  // nothing recorded in the range asked for

}  // namespace vigil::exit_code
