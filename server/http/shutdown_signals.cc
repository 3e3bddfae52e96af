#include "server/http/shutdown_signals.h"

#include <csignal>
#include <utility>

#if defined(_WIN32)
#include <windows.h>
#endif

namespace cerulean::server {

namespace {

#if defined(_WIN32)
// Console events: the C runtime turns Ctrl+C into SIGINT by itself; the
// others become SIGTERM here. raise() runs the handler Asio installed with
// signal(), which hands the signal to the io_context.
BOOL WINAPI OnConsoleEvent(DWORD event) {
  switch (event) {
    case CTRL_C_EVENT:
      std::raise(SIGINT);
      return TRUE;
    case CTRL_BREAK_EVENT:
      std::raise(SIGTERM);
      return TRUE;
    case CTRL_CLOSE_EVENT:
    case CTRL_LOGOFF_EVENT:
    case CTRL_SHUTDOWN_EVENT:
      std::raise(SIGTERM);
      // Returning would end the process now; main's return ends it (and
      // this thread) once the store is closed.
      Sleep(INFINITE);
      return TRUE;
    default:
      return FALSE;
  }
}
#endif

}  // namespace

ShutdownSignals::ShutdownSignals(boost::asio::io_context& ioc) : signals_(ioc, SIGINT, SIGTERM) {
#if defined(_WIN32)
  SetConsoleCtrlHandler(OnConsoleEvent, TRUE);
#endif
}

ShutdownSignals::~ShutdownSignals() {
#if defined(_WIN32)
  SetConsoleCtrlHandler(OnConsoleEvent, FALSE);
#endif
}

void ShutdownSignals::AsyncWait(std::function<void()> on_stop) {
  signals_.async_wait([on_stop = std::move(on_stop)](boost::system::error_code ec, int) {
    if (!ec) on_stop();
  });
}

}  // namespace cerulean::server
