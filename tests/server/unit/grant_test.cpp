// What each role may do (server/core/auth.hpp): the role x access table, and a camera set's
// limits — the one rule every HTTP route and wire request asks.
#include <catch2/catch_test_macros.hpp>

#include "server/core/auth.hpp"

using namespace vigil::server;

TEST_CASE("grant: the role x access table", "[auth]") {
  struct Row {
    Role role;
    bool view, record, post_events, admin;
  };
  const Row rows[] = {
      {Role::viewer, true, false, false, false},
      {Role::recorder, false, true, true, false},  // recorders keep posting events (documented)
      {Role::events, false, false, true, false},   // events only: no video either way
      {Role::admin, true, true, true, true},
  };
  for (const auto& r : rows) {
    INFO("role " << static_cast<int>(r.role));
    CHECK(allows(r.role, Access::open));
    CHECK(allows(r.role, Access::view) == r.view);
    CHECK(allows(r.role, Access::record) == r.record);
    CHECK(allows(r.role, Access::post_events) == r.post_events);
    CHECK(allows(r.role, Access::admin) == r.admin);
  }
  CHECK(role_from_name("events") == Role::events);
  CHECK_FALSE(role_from_name("root").has_value());
}

TEST_CASE("grant: a camera set limits every access; no set is every camera", "[auth]") {
  const Grant all{.role = Role::viewer, .token_id = 3, .label = "wall", .cameras = std::nullopt};
  CHECK_FALSE(all.scoped());
  CHECK(all.may(Access::view, "anything"));
  CHECK_FALSE(all.may(Access::record, "anything"));
  const Grant some{.role = Role::recorder, .token_id = 4, .label = "", .cameras = std::vector<std::string>{"a", "b"}};
  CHECK(some.scoped());
  CHECK(some.may(Access::record, "a"));
  CHECK(some.may(Access::record, "b"));
  CHECK_FALSE(some.may(Access::record, "c"));
  CHECK_FALSE(some.may(Access::record, "A"));  // names are exact
  CHECK_FALSE(some.may(Access::view, "a"));    // the role still decides
  CHECK(some.who() == "token 4");
  CHECK(all.who() == "wall");
  CHECK(Grant{}.who() == "no-auth");
}
