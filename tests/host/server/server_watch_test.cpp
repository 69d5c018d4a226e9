// The server stopping by itself: after idle_exit without a connection (never while one is open,
// never without idle_exit), when its state dir is moved or removed, when its socket file is
// removed or replaced (and then it leaves the other file alone); the lock handed down by the
// process that started it (inherited_lock_fd).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <sstream>
#include <string>
#include <thread>

#include "host/server/server.hpp"
#include "tests/host/server/rpc_client.hpp"
#include "tests/support/expect_throw.hpp"

namespace ctx::server {
namespace {

namespace fs = std::filesystem;
using testing::RpcClient;
using testing::TempStateDir;
using Json = core::Json;
using namespace std::chrono_literals;

MethodTable echo_table() {
  MethodTable table;
  table.add("test.echo", [](const Json& params) { return params; });
  return table;
}

// A server on `dir`, checking every 20 ms, running on its own thread from construction on.
class WatchedServer {
 public:
  WatchedServer(const fs::path& dir, std::chrono::milliseconds idle_exit,
                bool log_requests = true) {
    ServerOptions options;
    options.state_dir = dir;
    options.idle_exit = idle_exit;
    options.watch_interval = 20ms;
    options.log = &log_;
    options.log_requests = log_requests;
    server_ = std::make_unique<Server>(std::move(options), echo_table());
    done_ = std::async(std::launch::async, [this] { server_->run(); });
  }
  WatchedServer(const WatchedServer&) = delete;
  WatchedServer& operator=(const WatchedServer&) = delete;
  ~WatchedServer() {
    server_->stop();
    done_.wait();
  }

  // Whether run() returned by itself within `limit`.
  bool stops_within(std::chrono::milliseconds limit) {
    return done_.wait_for(limit) == std::future_status::ready;
  }
  // The log, once run() returned.
  std::string log() const { return log_.str(); }

 private:
  std::ostringstream log_;
  std::unique_ptr<Server> server_;
  std::future<void> done_;
};

std::string stop_line(const std::string& reason) {
  return Json{{"event", "stop"}, {"reason", reason}}.dump() + "\n";
}

TEST(ServerWatch, AnIdleServerStopsAfterIdleExitButNotWhileAConnectionIsOpen) {
  TempStateDir dir;
  WatchedServer server(dir.path(), 200ms, /*log_requests=*/false);
  {
    RpcClient client;
    ASSERT_TRUE(client.connect(dir.path() / kSocketFile));
    const Json reply = testing::call(client, 1, "test.echo", Json{{"x", 1}});
    EXPECT_EQ(reply["result"], Json({{"x", 1}}));
    EXPECT_FALSE(server.stops_within(700ms)) << "stopped with a connection open";
  }
  ASSERT_TRUE(server.stops_within(5s)) << "still running, idle since the connection closed";
  EXPECT_EQ(server.log(), stop_line("idle"));  // and no line for the request
  EXPECT_FALSE(fs::exists(dir.path() / kSocketFile));
}

TEST(ServerWatch, WithoutIdleExitAnIdleServerKeepsServing) {
  TempStateDir dir;
  WatchedServer server(dir.path(), 0ms);
  EXPECT_FALSE(server.stops_within(400ms));
  RpcClient client;
  ASSERT_TRUE(client.connect(dir.path() / kSocketFile));
  EXPECT_EQ(testing::call(client, 1, "test.echo", Json{{"x", 2}})["result"], Json({{"x", 2}}));
}

TEST(ServerWatch, AStateDirMovedAwayStopsTheServerAndItsSocketGoesWithIt) {
  TempStateDir dir;
  const fs::path moved = dir.path().string() + "-moved";
  {
    WatchedServer server(dir.path(), 0ms);
    fs::rename(dir.path(), moved);
    EXPECT_TRUE(server.stops_within(5s)) << "still running in a moved state dir";
    EXPECT_EQ(server.log(), stop_line("the state directory was moved or removed"));
    EXPECT_FALSE(fs::exists(moved / kSocketFile));
  }
  fs::rename(moved, dir.path());
}

TEST(ServerWatch, AStateDirRemovedStopsTheServer) {
  TempStateDir dir;
  WatchedServer server(dir.path(), 0ms);
  fs::remove_all(dir.path());
  EXPECT_TRUE(server.stops_within(5s)) << "still running in a removed state dir";
  EXPECT_EQ(server.log(), stop_line("the state directory was moved or removed"));
}

TEST(ServerWatch, ARemovedSocketFileStopsTheServer) {
  TempStateDir dir;
  WatchedServer server(dir.path(), 0ms);
  fs::remove(dir.path() / kSocketFile);
  EXPECT_TRUE(server.stops_within(5s)) << "still running, unreachable";
  EXPECT_EQ(server.log(), stop_line("the socket file was removed or replaced"));
}

// Another socket put at the name (by hand: no second server starts while one holds the lock):
// the server stops and leaves that file alone.
TEST(ServerWatch, AReplacedSocketFileStopsTheServerWhichLeavesTheNewFileInPlace) {
  TempStateDir dir;
  const fs::path socket = dir.path() / kSocketFile;
  WatchedServer server(dir.path(), 0ms);
  fs::remove(socket);
  const int other = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(other, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket.c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(::bind(other, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_TRUE(server.stops_within(5s));
  EXPECT_TRUE(fs::exists(socket)) << "the server removed a socket file it did not make";
  ::close(other);
}

// The description a starter holds the lock on becomes the server's: it starts while the starter
// still holds it, and the lock then keeps every other server out.
TEST(ServerWatch, AnInheritedLockDescriptionIsTakenOverAndKeepsOtherServersOut) {
  TempStateDir dir;
  const fs::path lock_path = dir.path() / kSocketLockFile;
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(lock, 0);
  ASSERT_EQ(::flock(lock, LOCK_EX | LOCK_NB), 0);
  ServerOptions options;
  options.state_dir = dir.path();
  options.inherited_lock_fd = lock;  // the server owns it from here on
  std::optional<Server> server;
  ASSERT_NO_THROW(server.emplace(options, echo_table()));
  ServerOptions second;
  second.state_dir = dir.path();
  CTX_EXPECT_THROW(Server(second, echo_table()), FailedPrecondition, "already running");
}

TEST(ServerWatch, AnInheritedDescriptorThatIsNotTheFreeLockIsRefused) {
  TempStateDir dir;
  const fs::path lock_path = dir.path() / kSocketLockFile;
  ServerOptions options;
  options.state_dir = dir.path();
  // Another file.
  const fs::path other = dir.path() / "other";
  const int not_the_lock = ::open(other.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(not_the_lock, 0);
  options.inherited_lock_fd = not_the_lock;
  CTX_EXPECT_THROW(Server(options, echo_table()), FailedPrecondition,
                   "is not the lock of state directory");
  ::close(not_the_lock);
  // The lock file, but locked through another description (a running server's).
  const int held = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);
  const int unlocked = ::open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
  options.inherited_lock_fd = unlocked;
  CTX_EXPECT_THROW(Server(options, echo_table()), FailedPrecondition,
                   "is not the lock of state directory");
  EXPECT_FALSE(fs::exists(dir.path() / kSocketFile));
  ::close(unlocked);
  ::close(held);
}

}  // namespace
}  // namespace ctx::server
