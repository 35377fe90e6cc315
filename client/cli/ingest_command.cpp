#include "client/cli/ingest_command.hpp"

#include <malloc.h>
#include <signal.h>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <atomic>
#include <iostream>

#include "client/cli/ingest_worker.hpp"
#include "common/command_line.hpp"
#include "common/exit_codes.hpp"
#include "common/page_memory.hpp"

namespace po = boost::program_options;

namespace vigil::client {
namespace {

constexpr CommandHelp kHelp{
    "vigil ingest",
    "Usage: vigil [--server HOST:PORT] ingest --control-fd N\n\n"
    "An ingest worker of vigild's camera manager: records many pulled cameras in one process, one\n"
    "thread each, started and stopped by vigild over the socket on descriptor N (lines \"start NAME\n"
    "URL [GAP_REASON]\" and \"stop NAME\"; it answers \"ended NAME EXIT_CODE [REASON]\"). Camera URLs\n"
    "come only through that socket, never on a command line. Each camera's lines go to stderr as\n"
    "\"camera=NAME ...\", passwords masked. SIGINT/SIGTERM, or the socket closing, stop every camera\n"
    "at once: each sends what it read and ends its stream.\n",
    "\nExit: 0 stopped, 2 usage.\n"};

std::atomic<bool> g_stop{false};
extern "C" void on_ingest_stop(int) { g_stop.store(true); }

}  // namespace

int ingest_main(const std::string& server, const std::string& token, const std::vector<std::string>& args) {
  int control_fd = -1;
  po::options_description o("Options");
  o.add_options()("control-fd", po::value(&control_fd)->value_name("N"), "the control socket from vigild");
  if (auto rc = parse_command_line(args, o, kHelp)) return *rc;
  if (control_fd < 3) return usage_error(kHelp, "--control-fd N (3 or more) is required");
  struct sigaction sa {};
  sa.sa_handler = on_ingest_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // vigild gone: a write fails with EPIPE instead
  // glibc gives each thread that allocates its own arena (up to 8 per core) and each keeps what
  // it freed: with a thread or two per camera that is megabytes per camera of memory in no use.
  // Two arenas are enough for threads that mostly wait on sockets; memory per camera stays small.
  mallopt(M_ARENA_MAX, 2);
  page_memory::return_large_blocks();  // a keyframe's pages go back when it is acknowledged
  IngestWorker worker(server, token, control_fd);
  return worker.run(g_stop);
}

}  // namespace vigil::client
