// Tests of ProbeHealth (`cerulean health`).
#include "server/http/health_probe.h"

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>

namespace cerulean::server {

TEST_CASE("ProbeHealth reports a refused connection") {
  // A port that was free a moment ago: nothing listens on it.
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor acceptor(
      ioc, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  unsigned short port = acceptor.local_endpoint().port();
  acceptor.close();
  std::string err = ProbeHealth("127.0.0.1", port, std::chrono::seconds(2));
  CHECK(err.find("connect") == 0);
}

}  // namespace cerulean::server
