#!/usr/bin/env bash
# MariaDB under sysbench (oltp_read_write, or TEST), profiled to completion
# (`make profile-mariadb`).
#
# A throw-away server in a temporary directory, on 127.0.0.1 and a free port, run by
# `locklab profile` from start to shutdown; sysbench prepares small tables, runs for
# RUN_SECONDS with THREADS clients, then the server is shut down and reports.
# Everything is bounded in time and removed afterwards.
#   env: LOCKLAB (the CLI), TEST (oltp_read_write), RUN_SECONDS (20), THREADS (16), TABLES (4),
#        TABLE_SIZE (10000),
#        PROFILE_OPTS (-s 8 --top 12), OUT (the report file; default: printed only)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
locklab=${LOCKLAB:-$root/.venv/bin/locklab}
run_seconds=${RUN_SECONDS:-20}
test=${TEST:-oltp_read_write}
threads=${THREADS:-16}
tables=${TABLES:-4}
table_size=${TABLE_SIZE:-10000}
read -r -a profile_opts <<< "${PROFILE_OPTS:--s 8 --top 12}"

need=()
command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
command -v sysbench >/dev/null || need+=(sysbench)
if [ ${#need[@]} -gt 0 ]; then
  echo "profile-mariadb: installing ${need[*]}"
  sudo=(); [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
mariadbd=$(command -v mariadbd || echo /usr/sbin/mariadbd)

work=$(mktemp -d /tmp/locklab-mariadb.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sock=$work/mysqld.sock
profiler_pid=
cleanup() {
  if [ -n "$profiler_pid" ] && kill -0 "$profiler_pid" 2>/dev/null; then
    mariadb-admin --no-defaults -S "$sock" -uroot shutdown 2>/dev/null || kill "$profiler_pid"
    timeout 60 tail --pid="$profiler_pid" -f /dev/null || kill -9 "$profiler_pid"
  fi
  rm -rf "$work"
}
trap cleanup EXIT

user=(); [ "$(id -u)" -eq 0 ] && user=(--user=root)
echo "profile-mariadb: initialising a data directory in $work"
mariadb-install-db --no-defaults "${user[@]}" --datadir="$work/data" \
  --auth-root-authentication-method=normal --skip-test-db >"$work/install.log" 2>&1

"$locklab" profile "${profile_opts[@]}" -o "$work/profile.txt" -- \
  "$mariadbd" --no-defaults "${user[@]}" --datadir="$work/data" --socket="$sock" \
  --port="$port" --bind-address=127.0.0.1 --skip-grant-tables --skip-log-bin \
  --innodb-buffer-pool-size=256M --innodb-log-file-size=128M \
  --innodb-flush-log-at-trx-commit=2 --max-connections=200 \
  --log-error="$work/error.log" &
profiler_pid=$!

for _ in $(seq 100); do
  mariadb-admin --no-defaults -S "$sock" -uroot ping >/dev/null 2>&1 && break
  sleep 0.3
done
mariadb --no-defaults -S "$sock" -uroot -e "CREATE DATABASE sbtest"

sb=(sysbench "$test" --db-driver=mysql --mysql-socket="$sock" --mysql-user=root
    --tables="$tables" --table-size="$table_size")
timeout 300 "${sb[@]}" prepare >"$work/prepare.log"
timeout $((run_seconds + 120)) "${sb[@]}" --threads="$threads" --time="$run_seconds" \
  --report-interval=5 run | tee "$work/sysbench.log"

mariadb-admin --no-defaults -S "$sock" -uroot shutdown
timeout 120 tail --pid="$profiler_pid" -f /dev/null
wait "$profiler_pid" || true
profiler_pid=

echo
echo "=== locklab profile of mariadbd (sysbench $test, $threads threads, ${run_seconds}s)"
cat "$work/profile.txt"
[ -n "${OUT:-}" ] && cp "$work/profile.txt" "$OUT"
exit 0
