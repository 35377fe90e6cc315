#pragma once
// One argument parser for every `vigil` command: Program_options with the command's options,
// its positional arguments, and help that is the command's synopsis, its options and its exit
// codes. A malformed value (`--rate abc`), an unknown option or a missing value is a usage error
// naming the option (exit_code::kUsage), never a silent zero.
// Thread: the command's main thread. Errors: parse_command_line prints and returns the exit code;
// nothing escapes it.
#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <cstddef>
#include <iosfwd>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vigil {

struct CommandHelp {
  std::string_view command;   // "vigil camera": prefixes every message
  std::string_view synopsis;  // usage lines and what the command does, before the options
  std::string_view footer;    // after the options: exit codes, examples
};

// Parses ARGS (the words after the command's name) against OPTIONS, adding -h/--help; the other
// words go to POSITIONAL, at most MAX_POSITIONAL of them. Nullopt: go on. Else the command
// returns the value: exit_code::kOk after printing help, kUsage after printing what is wrong.
std::optional<int> parse_command_line(const std::vector<std::string>& args,
                                      const boost::program_options::options_description& options,
                                      const CommandHelp& help, std::vector<std::string>* positional = nullptr,
                                      std::size_t max_positional = std::numeric_limits<std::size_t>::max());

// The usage error for a value Program_options accepted but the command does not (a range, a
// combination): printed as parse_command_line prints its own; returns exit_code::kUsage.
int usage_error(const CommandHelp& help, std::string_view message);

// The help text: synopsis, options, footer.
void print_help(std::ostream& out, const boost::program_options::options_description& options, const CommandHelp& help);

}  // namespace vigil
