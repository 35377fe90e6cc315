#include "common/command_line.hpp"

#include <boost/program_options/parsers.hpp>
#include <boost/program_options/positional_options.hpp>
#include <boost/program_options/variables_map.hpp>
#include <iostream>

#include "common/exit_codes.hpp"

namespace po = boost::program_options;

namespace vigil {

void print_help(std::ostream& out, const po::options_description& options, const CommandHelp& help) {
  out << help.synopsis << "\n" << options << help.footer;
}

int usage_error(const CommandHelp& help, std::string_view message) {
  std::cerr << help.command << ": " << message << "\nTry '" << help.command << " --help'.\n";
  return exit_code::kUsage;
}

std::optional<int> parse_command_line(const std::vector<std::string>& args, const po::options_description& options,
                                      const CommandHelp& help, std::vector<std::string>* positional,
                                      std::size_t max_positional) {
  bool want_help = false;
  po::options_description help_option;
  help_option.add_options()("help,h", po::bool_switch(&want_help), "show this help");
  po::options_description all;
  all.add(options).add(help_option);
  std::vector<std::string> words;
  po::options_description hidden;
  hidden.add_options()("positional-word", po::value(&words));
  po::options_description parsed_options;
  parsed_options.add(all).add(hidden);
  po::positional_options_description pos;
  pos.add("positional-word", -1);
  try {
    // Guessing a long option from a prefix would let a typo reach a different option.
    const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::variables_map vm;
    po::store(po::command_line_parser(args).options(parsed_options).positional(pos).style(style).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return usage_error(help, e.what());
  }
  if (want_help) {
    print_help(std::cout, all, help);
    return exit_code::kOk;
  }
  if (!positional && !words.empty()) return usage_error(help, "unexpected argument '" + words.front() + "'");
  if (words.size() > max_positional) return usage_error(help, "unexpected argument '" + words[max_positional] + "'");
  if (positional) *positional = std::move(words);
  return std::nullopt;
}

}  // namespace vigil
