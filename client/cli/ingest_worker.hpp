#pragma once
// An ingest worker: one process that records many pulled cameras for vigild's camera manager
// (docs/protocol.md, "Pulled cameras"), one thread per camera, each running what `vigil record`
// runs (record_pull: InputDemuxer + RecorderSession) with its own stop flag. vigild starts and
// stops cameras over the control socket (common/ingest_control.hpp); each ended session is
// reported back with its exit code and last words. A demuxer that crashes takes down this
// worker's cameras only: vigild restarts the worker and them, with a gap saying why.
// Every line a camera's session says goes to stderr (the worker's log, opened by vigild) as
// "camera=NAME ..." with URL passwords masked, FFmpeg's own messages included.
// Thread: run() on the main thread; camera threads are its own. Errors: run() returns an exit code.
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/ingest_control.hpp"

namespace vigil::client {

class IngestWorker {
 public:
  // SERVER, TOKEN: vigild's wire address and the recorder token. CONTROL_FD: the socket to vigild.
  IngestWorker(std::string server, std::string token, int control_fd);
  ~IngestWorker();
  IngestWorker(const IngestWorker&) = delete;
  IngestWorker& operator=(const IngestWorker&) = delete;

  // Serves commands until vigild closes the control socket or STOP is set; then stops every
  // camera at once (each sends what it read and ends its stream) and waits for them. 0: clean.
  int run(const std::atomic<bool>& stop);

 private:
  struct Camera;
  void handle(std::string_view line);
  void start(const ingest::Start& m);
  void send(const std::string& message);  // to vigild; any thread
  void reap(bool all);

  std::string server_, token_;
  int control_fd_;
  std::mutex send_mu_;
  std::map<std::string, std::unique_ptr<Camera>> cameras_;        // the main thread's
  std::multimap<std::string, std::unique_ptr<Camera>> stopping_;  // stop asked, thread not yet joined
};

}  // namespace vigil::client
