// Tests of the command line: subcommands, stray words and connection-limit flags.
#include "server/cli.h"

#include <doctest/doctest.h>

#include <string>
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

TEST_CASE("subcommands take their words; any other word is refused with the usage") {
  CliOptions serve;
  CHECK_FALSE(Parse({"--location", "d"}, &serve));
  CHECK(serve.command.empty());
  CHECK(serve.command_args.empty());

  CliOptions snapshot;
  CHECK_FALSE(Parse({"snapshot", "restore", "before", "--location", "d"}, &snapshot));
  CHECK(snapshot.command == "snapshot");
  CHECK(snapshot.command_args == std::vector<std::string>{"restore", "before"});
  CHECK(snapshot.location == "d");
  CliOptions list;
  CHECK_FALSE(Parse({"snapshot", "list"}, &list));
  CHECK(list.command_args == std::vector<std::string>{"list"});
  CliOptions exported;
  CHECK_FALSE(Parse({"export", "--table", "a", "--file", "f"}, &exported));
  CHECK(exported.command == "export");
  CHECK(exported.command_args.empty());
  CHECK(exported.tables == std::vector<std::string>{"a"});

  struct Refused {
    std::vector<const char*> args;
    const char* message;
  };
  const Refused refused[] = {
      {{"snapshots", "list"}, "unknown command 'snapshots'"},
      {{"foo"}, "unknown command 'foo'"},
      {{"azurite", "-l", "DIR"}, "unknown command 'azurite'"},
      {{"--location", "d", "serve"}, "unknown command 'serve'"},
      {{"reset", "now"}, "reset: unexpected word 'now'"},
      {{"snapshot", "save", "a", "b"}, "snapshot: unexpected word 'b'"},
  };
  for (const Refused& r : refused) {
    CAPTURE(r.message);
    CliOptions out;
    auto err = Parse(r.args, &out);
    REQUIRE(err);
    CHECK(*err == r.message);
    CHECK(out.help_text.find("Usage: cerulean") != std::string::npos);
  }
}

TEST_CASE("the usage lists every subcommand") {
  CliOptions help;
  CHECK_FALSE(Parse({"--help"}, &help));
  for (const Subcommand& sub : Subcommands()) {
    CAPTURE(sub.name);
    CHECK(help.help_text.find(std::string("cerulean ") + sub.synopsis) != std::string::npos);
  }
  CHECK(help.help_text.find("--word") == std::string::npos);
  CHECK(help.help_text.find("blobHost") == std::string::npos);
}

TEST_CASE("Azurite's blob and queue options are refused with the reason") {
  for (const char* option : {"--blobHost", "--blobPort", "--queueHost", "--queuePort"}) {
    CAPTURE(option);
    CliOptions out;
    auto err = Parse({option, "0.0.0.0"}, &out);
    REQUIRE(err);
    CHECK(err->find("Cerulean serves the Table service only") != std::string::npos);
  }
}

}  // namespace cerulean::server
