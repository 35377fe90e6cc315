// The IO thread's scheduling (server/disks/io_thread_priority.hpp): --io-priority normal leaves
// the thread alone; realtime either gets SCHED_FIFO (and says how it is capped) or stays normal
// and says why — never an exception; the run-queue delay reading (the cpu_starved cause) is a
// non-decreasing time on Linux.
#include <catch2/catch_test_macros.hpp>

#include <pthread.h>
#include <sched.h>

#include <thread>

#include "server/disks/io_thread_priority.hpp"

using namespace vigil::server;

TEST_CASE("IO thread priority: normal is left alone, realtime is granted or refused with the reason", "[io_priority]") {
  std::thread([] {
    const auto normal = apply_io_priority(IoPriority::normal);
    CHECK_FALSE(normal.realtime);
    CHECK(sched_getscheduler(0) == SCHED_OTHER);

    const auto rt = apply_io_priority(IoPriority::realtime);
    int policy = 0;
    sched_param sp{};
    pthread_getschedparam(pthread_self(), &policy, &sp);
    if (rt.realtime) {
      CHECK((policy & ~SCHED_RESET_ON_FORK) == SCHED_FIFO);
      // A thread it starts is not real-time.
      std::thread([] { CHECK(sched_getscheduler(0) == SCHED_OTHER); }).join();
      CHECK(rt.detail.find("RLIMIT_RTTIME") != std::string::npos);
      demote_to_normal();
      pthread_getschedparam(pthread_self(), &policy, &sp);
      CHECK(policy == SCHED_OTHER);
    } else {
      CHECK(policy == SCHED_OTHER);
      CHECK(rt.detail.starts_with("normal priority: SCHED_FIFO refused"));
    }
    CHECK_FALSE(rttime_exceeded());
  }).join();
}

TEST_CASE("the IO thread's run-queue delay reads as a non-decreasing time", "[io_priority]") {
  RunDelay delay;
  REQUIRE(delay.available());  // Linux with schedstats in /proc
  const auto a = delay.read();
  volatile double x = 0;
  for (int i = 0; i < 1'000'000; ++i) x = x + 1;  // some running between the readings
  const auto b = delay.read();
  CHECK(a.count() >= 0);
  CHECK(b >= a);
}
