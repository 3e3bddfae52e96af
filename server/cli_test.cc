// Tests of the command line's connection-limit flags.
#include "server/cli.h"

#include <doctest/doctest.h>

#include <vector>

namespace cerulean::server {

namespace {

std::optional<std::string> Parse(std::vector<const char*> args, CliOptions* out) {
  args.insert(args.begin(), "cerulean");
  return ParseCli(static_cast<int>(args.size()), args.data(), out);
}

}  // namespace

TEST_CASE("--maxConnections, --keepAliveTimeout and --requestTimeout") {
  CliOptions defaults;
  CHECK_FALSE(Parse({}, &defaults));
  CHECK(defaults.max_connections == 1000);
  CHECK(defaults.request_timeout_s == 60);
  CHECK(defaults.keep_alive_timeout_s == 60);
  CHECK(defaults.help_text.empty());
  CliOptions help;
  CHECK_FALSE(Parse({"--help"}, &help));
  CHECK(help.help_text.find("--keepAliveTimeout") != std::string::npos);
  CHECK(help.help_text.find("--maxConnections") != std::string::npos);
  CHECK(help.help_text.find("--requestTimeout") != std::string::npos);
  CliOptions wrong;
  CHECK(Parse({"--nonsense"}, &wrong));
  CHECK(wrong.help_text.find("Usage: cerulean") != std::string::npos);

  CliOptions set;
  CHECK_FALSE(
      Parse({"--maxConnections", "20", "--requestTimeout", "5", "--keepAliveTimeout", "7"}, &set));
  CHECK(set.keep_alive_timeout_s == 7);
  CHECK(set.max_connections == 20);
  CHECK(set.request_timeout_s == 5);

  CliOptions bad;
  CHECK(Parse({"--maxConnections", "0"}, &bad));
  CHECK(Parse({"--requestTimeout", "0"}, &bad));
  CHECK(Parse({"--keepAliveTimeout", "0"}, &bad));
  CHECK(Parse({"--maxConnections", "many"}, &bad));
}

}  // namespace cerulean::server
