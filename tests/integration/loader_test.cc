#include "plugin_host/loader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "plugin_host/library_states.h"
#include "test_support.h"

namespace kuscia_host {
namespace {

namespace fs = std::filesystem;

std::string testPlugin(const std::string& name) {
  // A path join, not string concatenation: GCC 12 at -O2 warns falsely (-Warray-bounds) about
  // std::string operator+ chains once they are inlined here.
  return (fs::path(KH_TEST_PLUGIN_DIR) / (name + ".so")).string();
}

class LoaderTest : public ::testing::Test {
protected:
  PluginLoader loader_{LoaderOptions{::geteuid()}};
};

TEST_F(LoaderTest, LoadsAGoodPlugin) {
  auto lib = loader_.load(testPlugin("probe"));
  ASSERT_TRUE(lib.ok()) << lib.error();
  EXPECT_EQ(lib.value()->name(), "probe");
  EXPECT_EQ(lib.value()->version(), "1.0.0");
  EXPECT_EQ(lib.value()->descriptor().abi_major, KH_ABI_VERSION_MAJOR);
  EXPECT_NE(lib.value()->descriptor().on_timer, nullptr);
}

TEST_F(LoaderTest, LoadsTheBundledHelloPlugin) {
  auto lib = loader_.load((fs::path(KH_PLUGIN_DIR) / "heartbeat.so").string());
  ASSERT_TRUE(lib.ok()) << lib.error();
  EXPECT_EQ(lib.value()->name(), "heartbeat");
}

TEST_F(LoaderTest, RefusesAbiMajor2NamingBothVersions) {
  auto lib = loader_.load(testPlugin("bad_abi2"));
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().find(testPlugin("bad_abi2")), std::string::npos) << lib.error();
  EXPECT_NE(lib.error().find("built for ABI 2.x"), std::string::npos) << lib.error();
  EXPECT_NE(lib.error().find("this host speaks ABI 1.6"), std::string::npos) << lib.error();
}

TEST_F(LoaderTest, RefusesMajorMismatchInsideDescriptor) {
  auto lib = loader_.load(testPlugin("bad_bad_major"));
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().find("built for ABI 2.0, but this host speaks ABI 1.6"), std::string::npos)
      << lib.error();
}

TEST_F(LoaderTest, RefusesNewerMinor) {
  auto lib = loader_.load(testPlugin("bad_newer_minor"));
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().find("needs ABI 1.7, newer than this host's ABI 1.6"), std::string::npos)
      << lib.error();
  EXPECT_NE(lib.error().find("upgrade kuscia-host"), std::string::npos);
}

TEST_F(LoaderTest, RefusesMissingEntrySymbol) {
  auto lib = loader_.load(testPlugin("bad_no_entry"));
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().find("does not export kh_plugin_entry_v1"), std::string::npos)
      << lib.error();
}

TEST_F(LoaderTest, RefusesUnresolvedSymbolNamingIt) {
  auto lib = loader_.load(testPlugin("bad_unresolved"));
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().find("cannot load"), std::string::npos) << lib.error();
  EXPECT_NE(lib.error().find("kh_test_symbol_that_does_not_exist"), std::string::npos)
      << lib.error();
}

TEST_F(LoaderTest, RefusesRelativePath) {
  auto lib = loader_.load("plugins/probe.so");
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().find("must be absolute"), std::string::npos) << lib.error();
}

TEST_F(LoaderTest, RefusesGroupWritableFileAndDirectory) {
  test::TempDir dir;
  auto copy = dir.file("probe.so");
  fs::copy_file(testPlugin("probe"), copy);
  fs::permissions(copy, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
  ASSERT_TRUE(loader_.load(copy).ok());

  fs::permissions(copy, fs::perms::group_write, fs::perm_options::add);
  auto lib = loader_.load(copy);
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().find("file " + copy + " is writable by group or others"), std::string::npos)
      << lib.error();

  fs::permissions(copy, fs::perms::group_write, fs::perm_options::remove);
  fs::permissions(dir.path(), fs::perms::others_write, fs::perm_options::add);
  lib = loader_.load(copy);
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().find("directory " + dir.path().string() + " is writable"),
            std::string::npos)
      << lib.error();
}

TEST_F(LoaderTest, RefusesFileOwnedByAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown";
  test::TempDir dir;
  auto copy = dir.file("probe.so");
  fs::copy_file(testPlugin("probe"), copy);
  ASSERT_EQ(::chown(copy.c_str(), 65534, 65534), 0);
  auto lib = loader_.load(copy);
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().find("is owned by uid 65534"), std::string::npos) << lib.error();
}

TEST_F(LoaderTest, RefusesNonPluginFiles) {
  test::TempDir dir;
  auto junk = dir.file("junk.so");
  test::writeFile(junk, "not an ELF file");
  fs::permissions(junk, fs::perms::owner_read | fs::perms::owner_write);
  auto lib = loader_.load(junk);
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().find("plugin " + junk + ": cannot load"), std::string::npos) << lib.error();
  EXPECT_FALSE(loader_.load(dir.path().string()).ok()); // a directory
}

// A library's state (ABI 1.5 library_state) is made once per make function, is the same at every
// later call, keeps its library loaded, and is destroyed with the host's states, the last made
// first.
TEST_F(LoaderTest, LibraryStatesAreMadeOncePerTypeAndDestroyedLastFirst) {
  static std::vector<std::string> log;
  log.clear();
  auto lib = loader_.load(testPlugin("probe"));
  ASSERT_TRUE(lib.ok()) << lib.error();
  std::weak_ptr<PluginLibrary> held = *lib;
  using Make = LibraryStates::Make;
  Make makeA = [] { return static_cast<void*>(new std::string("a")); };
  Make makeB = [] { return static_cast<void*>(new std::string("b")); };
  auto destroy = [](void* p) {
    auto* s = static_cast<std::string*>(p);
    log.push_back(*s);
    delete s;
  };
  {
    LibraryStates states;
    void* a = states.get(*lib, makeA, destroy);
    EXPECT_EQ(*static_cast<std::string*>(a), "a");
    EXPECT_EQ(states.get(*lib, makeA, destroy), a);
    EXPECT_NE(states.get(*lib, makeB, destroy), a);
    EXPECT_EQ(states.get(
                  *lib, [] { return static_cast<void*>(nullptr); }, destroy),
              nullptr);
    EXPECT_EQ(states.size(), 2u);
    lib->reset();
    EXPECT_FALSE(held.expired()); // the states hold the library until they are destroyed
  }
  EXPECT_EQ(log, (std::vector<std::string>{"b", "a"}));
  EXPECT_TRUE(held.expired());
}

} // namespace
} // namespace kuscia_host
