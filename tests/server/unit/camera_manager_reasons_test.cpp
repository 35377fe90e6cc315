// The gap reasons the camera manager gives a pulled camera's next recording: from how its session
// ended (the ingest worker's exit code and last words) or how its worker died.
#include <sys/wait.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "server/recording/camera_manager.hpp"

using Catch::Matchers::ContainsSubstring;
using vigil::server::CameraManager;

TEST_CASE("a session's end becomes a reason from its exit code and last words", "[camera]") {
  CHECK(CameraManager::exit_reason(W_EXITCODE(1, 0), "vigil record: cannot open rtsp://h/x") ==
        "camera unreachable or stream lost: vigil record: cannot open rtsp://h/x");
  CHECK(CameraManager::exit_reason(W_EXITCODE(4, 0), "") == "admission refused");
  CHECK(CameraManager::exit_reason(W_EXITCODE(3, 0), "") == "vigild's wire port unreachable");
  CHECK_THAT(CameraManager::exit_reason(W_EXITCODE(9, 0), "x"), ContainsSubstring("recorder failed"));
}

TEST_CASE("a worker's death names the worker and the signal", "[camera]") {
  CHECK(CameraManager::worker_death_reason(W_EXITCODE(0, SIGKILL)) == "ingest worker died (signal 9)");
  CHECK(CameraManager::worker_death_reason(W_EXITCODE(0, SIGSEGV)) == "ingest worker died (signal 11)");
  CHECK_THAT(CameraManager::worker_death_reason(W_EXITCODE(2, 0)), ContainsSubstring("ingest worker died (exited"));
}
