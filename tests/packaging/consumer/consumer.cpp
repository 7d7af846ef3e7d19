/*
 * consumer.cpp: a C++ program built against an installed liblocklab, the way
 * a user builds one (tests/packaging/install.cmake: through pkg-config, then
 * through find_package(locklab)).  Exits 0 only if locklab/mutex.hpp's types
 * did what the standard's lock tools expect of them.
 */
#include <locklab/mutex.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace {

int failed;

void check(bool ok, const char *what)
{
	if (!ok) {
		std::fprintf(stderr, "consumer.cpp: %s\n", what);
		failed = 1;
	}
}

} // namespace

int main()
{
	locklab::mutex m;
	locklab::mutex ticket("ticket", "spin=yield");
	locklab::shared_mutex rw("bravo");
	check(!std::strcmp(m.algorithm(), "ll"), "locklab::mutex is not ll");
	check(!std::strcmp(ticket.algorithm(), "ticket"), "the ticket mutex is not ticket");

	long count = 0;
	std::vector<std::thread> threads;
	for (int i = 0; i < 4; i++)
		threads.emplace_back([&] {
			for (int k = 0; k < 1000; k++) {
				std::scoped_lock both(m, ticket);
				count++;
			}
		});
	for (auto &t : threads)
		t.join();
	check(count == 4000, "scoped_lock over two mutexes: the count does not add up");

	{
		std::shared_lock<locklab::shared_mutex> r(rw);
		std::thread([&] {
			std::unique_lock<locklab::shared_mutex> w(rw, std::defer_lock);
			check(!w.try_lock_for(std::chrono::milliseconds(5)), "a writer got in beside a reader");
		}).join();
	}
	{
		std::unique_lock<locklab::mutex> l(m, std::try_to_lock);
		check(l.owns_lock(), "try_to_lock of a free mutex failed");
	}

	try {
		locklab::mutex bad("no-such-lock");
		check(false, "a mutex named no-such-lock was constructed");
	} catch (const std::system_error &e) {
		check(e.code() == std::errc::invalid_argument, "a bad name is not EINVAL");
		check(std::strstr(e.what(), "unknown lock 'no-such-lock'") != nullptr,
		      "a bad name's message is not the library's");
	}
	if (!failed)
		std::puts("consumer.cpp: locklab::mutex, shared_mutex: scoped_lock, shared_lock, "
			  "unique_lock, a bad name: ok");
	return failed;
}
