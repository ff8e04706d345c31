#!/usr/bin/env bash
# Private Postgres, Redis and Mailpit instances for seatd development and
# tests, and for the test and bench profiles a stripe-mock (Stripe's API
# server, built into .bin by `make stripe-mock`; it keeps no state and
# sends no webhooks).
#
# Usage: scripts/services.sh up|down|status|env [dev|test]
#
#   install install the missing system packages (Postgres, Redis) only
#   up      start the services (idempotent), then print the env exports
#   down    stop the services (by PID only), keeping their data
#   status  report what is running; exits 0 only if every managed service is up
#   env     print the env exports without touching anything
#
# Only the `export ...` lines go to stdout, so callers can do
#   eval "$(scripts/services.sh up test)"
# All progress and diagnostics go to stderr.
#
# Profiles (ports overridable with SEATD_PG_PORT / SEATD_REDIS_PORT):
#   dev   Postgres 25432, Redis 26379, durable settings
#   test  Postgres 25442, Redis 26389, fsync/synchronous_commit/full_page_writes off
#   bench Postgres 25452, Redis 26399, durable settings
# Mailpit (a mail server that keeps what it receives; its inbox and REST
# API are on a web port) listens for SMTP on the Postgres port + 5 and
# serves its inbox on the Postgres port + 6 (dev 25437/25438, test
# 25447/25448, bench 25457/25458), or on SEATD_SMTP_PORT /
# SEATD_MAILPIT_PORT. The binary is .bin/mailpit, pinned and installed by
# `make mailpit` (which `up` runs when needed).
#
# test and bench also run stripe-mock on the Postgres port + 20 (HTTP; the
# HTTPS port is the next one), overridable with SEATD_STRIPE_MOCK_PORT /
# SEATD_STRIPE_MOCK_HTTPS_PORT, and export SEATD_STRIPE_MOCK_URL.
# The ports lie below Linux's ephemeral range (32768-60999), so an outgoing
# connection of some other program can never be holding one of them.
#
# If DATABASE_URL is already set, Postgres is left alone entirely (someone
# else provides it); likewise REDIS_URL for Redis, SEATD_SMTP_URL for
# Mailpit (SEATD_MAILPIT_URL is then printed only if set too) and
# SEATD_STRIPE_MOCK_URL for stripe-mock.
#
# State lives in .data/<profile>/: pg/ (data dir), redis/ (working dir),
# mailpit.db, stripe-mock/ (its working dir), *.log, redis.pid, mailpit.pid,
# stripe-mock.pid. When run as root, Postgres runs as the unprivileged
# `postgres` user (it refuses to run as root); if that user cannot reach
# .data/ (e.g. the repo is under /root), the data dir is placed under
# /tmp/seatd-<profile>-<hash> and .data/<profile>/pg is a symlink to it.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=$(cd "$SCRIPT_DIR/.." && pwd -P)
LOG_TAG=services
# shellcheck source=scripts/lib/common.sh
source "$SCRIPT_DIR/lib/common.sh"

usage() {
	cat <<-'EOF'
	usage: scripts/services.sh up|down|status|env|install [dev|test|bench]
	  env overrides: SEATD_PG_PORT, SEATD_REDIS_PORT, SEATD_SMTP_PORT, SEATD_MAILPIT_PORT,
	    SEATD_STRIPE_MOCK_PORT, SEATD_STRIPE_MOCK_HTTPS_PORT;
	  DATABASE_URL / REDIS_URL / SEATD_SMTP_URL / SEATD_STRIPE_MOCK_URL set => that service is external and not managed.
	EOF
}

CMD=${1:-}
PROFILE=${2:-dev}
case $CMD in
up | down | status | env | install) ;;
-h | --help | help)
	usage
	exit 0
	;;
*)
	usage >&2
	exit 2
	;;
esac
case $PROFILE in
dev) PG_PORT=${SEATD_PG_PORT:-25432} REDIS_PORT=${SEATD_REDIS_PORT:-26379} ;;
test) PG_PORT=${SEATD_PG_PORT:-25442} REDIS_PORT=${SEATD_REDIS_PORT:-26389} ;;
bench) PG_PORT=${SEATD_PG_PORT:-25452} REDIS_PORT=${SEATD_REDIS_PORT:-26399} ;;
*) die "unknown profile '$PROFILE' (want dev, test or bench)" ;;
esac
[[ $PG_PORT =~ ^[0-9]+$ ]] || die "SEATD_PG_PORT must be a number, got '$PG_PORT'"
[[ $REDIS_PORT =~ ^[0-9]+$ ]] || die "SEATD_REDIS_PORT must be a number, got '$REDIS_PORT'"
# Beside the Postgres port: a worktree that moved its Postgres port moves
# Mailpit's with it.
SMTP_PORT=${SEATD_SMTP_PORT:-$((PG_PORT + 5))}
MAILPIT_PORT=${SEATD_MAILPIT_PORT:-$((PG_PORT + 6))}
[[ $SMTP_PORT =~ ^[0-9]+$ ]] || die "SEATD_SMTP_PORT must be a number, got '$SMTP_PORT'"
[[ $MAILPIT_PORT =~ ^[0-9]+$ ]] || die "SEATD_MAILPIT_PORT must be a number, got '$MAILPIT_PORT'"
# stripe-mock follows the Postgres port, so a worktree that moved its
# Postgres gets a stripe-mock port of its own too.
STRIPE_MOCK_PORT=${SEATD_STRIPE_MOCK_PORT:-$((PG_PORT + 20))}
[[ $STRIPE_MOCK_PORT =~ ^[0-9]+$ ]] || die "SEATD_STRIPE_MOCK_PORT must be a number, got '$STRIPE_MOCK_PORT'"
STRIPE_MOCK_HTTPS_PORT=${SEATD_STRIPE_MOCK_HTTPS_PORT:-$((STRIPE_MOCK_PORT + 1))}
[[ $STRIPE_MOCK_HTTPS_PORT =~ ^[0-9]+$ ]] || die "SEATD_STRIPE_MOCK_HTTPS_PORT must be a number, got '$STRIPE_MOCK_HTTPS_PORT'"

DATA_DIR=$ROOT/.data/$PROFILE
IS_ROOT=0
[[ $(id -u) -eq 0 ]] && IS_ROOT=1

# An externally provided URL means the service is not ours to manage.
MANAGE_PG=1
[[ -n ${DATABASE_URL:-} ]] && MANAGE_PG=0
MANAGE_REDIS=1
[[ -n ${REDIS_URL:-} ]] && MANAGE_REDIS=0
MANAGE_MAIL=1
[[ -n ${SEATD_SMTP_URL:-} ]] && MANAGE_MAIL=0
# stripe-mock serves the tests and the bench; dev uses seatd's test provider.
WANT_STRIPE_MOCK=0
[[ $PROFILE == test || $PROFILE == bench ]] && WANT_STRIPE_MOCK=1
MANAGE_STRIPE_MOCK=$WANT_STRIPE_MOCK
[[ -n ${SEATD_STRIPE_MOCK_URL:-} ]] && MANAGE_STRIPE_MOCK=0

# ---------------------------------------------------------------------------
# env output

# Single-quote a value for safe `eval` (the URL contains `?`, a glob char).
shell_quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

print_env() {
	local db=${DATABASE_URL:-postgres://seatd@127.0.0.1:$PG_PORT/seatd?sslmode=disable}
	local rd=${REDIS_URL:-redis://127.0.0.1:$REDIS_PORT/0}
	printf 'export DATABASE_URL=%s\n' "$(shell_quote "$db")"
	printf 'export REDIS_URL=%s\n' "$(shell_quote "$rd")"
	if ((MANAGE_MAIL)); then
		printf 'export SEATD_SMTP_URL=%s\n' "$(shell_quote "smtp://127.0.0.1:$SMTP_PORT")"
		printf 'export SEATD_MAILPIT_URL=%s\n' "$(shell_quote "http://127.0.0.1:$MAILPIT_PORT")"
	else
		printf 'export SEATD_SMTP_URL=%s\n' "$(shell_quote "$SEATD_SMTP_URL")"
		if [[ -n ${SEATD_MAILPIT_URL:-} ]]; then
			printf 'export SEATD_MAILPIT_URL=%s\n' "$(shell_quote "$SEATD_MAILPIT_URL")"
		fi
	fi
	if ((WANT_STRIPE_MOCK)); then
		local sm=${SEATD_STRIPE_MOCK_URL:-http://127.0.0.1:$STRIPE_MOCK_PORT}
		printf 'export SEATD_STRIPE_MOCK_URL=%s\n' "$(shell_quote "$sm")"
	fi
}

# ---------------------------------------------------------------------------
# binaries

# Highest installed Postgres version's bin dir, or nothing.
find_pg_bin() {
	local d found=()
	for d in /usr/lib/postgresql/*/bin; do
		[[ -x $d/initdb && -x $d/pg_ctl ]] && found+=("$d")
	done
	((${#found[@]})) || return 0
	printf '%s\n' "${found[@]}" | sort -V | tail -n 1
}

PG_BIN=$(find_pg_bin)

# Install whatever is missing, with a single apt-get update.
ensure_binaries() {
	local pkgs=()
	if ((MANAGE_PG)) && [[ -z $PG_BIN ]]; then pkgs+=(postgresql); fi
	if ((MANAGE_REDIS)) && ! command -v redis-server >/dev/null 2>&1; then pkgs+=(redis-server); fi
	# redis-cli comes from redis-tools, a dependency of redis-server; be explicit
	# in case only the server is present.
	if ((MANAGE_REDIS)) && ! command -v redis-cli >/dev/null 2>&1; then pkgs+=(redis-tools); fi
	((${#pkgs[@]})) || return 0
	apt_install "${pkgs[@]}"
	PG_BIN=$(find_pg_bin)
	if ((MANAGE_PG)) && [[ -z $PG_BIN ]]; then die "postgresql installed but no /usr/lib/postgresql/*/bin found"; fi
	return 0
}

# ---------------------------------------------------------------------------
# Postgres

PG_USER=""        # OS user that owns the cluster and runs pg_ctl
PG_HOME=$DATA_DIR # directory that really holds pg/ and postgres.log
PG_DATA=$DATA_DIR/pg
PG_LOG=$DATA_DIR/postgres.log
PG_RELOCATED=0

# Follow .data/<profile>/pg if it is our symlink to a relocated data dir.
# Must be the real path: the postgres user cannot walk through the symlink's
# own location when that location is not traversable for it.
pg_resolve_paths() {
	if [[ -L $DATA_DIR/pg ]]; then
		PG_DATA=$(readlink "$DATA_DIR/pg")
		[[ $PG_DATA == /* ]] || die "$DATA_DIR/pg is a relative symlink; expected one made by this script"
		PG_HOME=$(dirname "$PG_DATA")
		PG_LOG=$PG_HOME/postgres.log
		PG_RELOCATED=1
	fi
}

# Run a command as the cluster owner. `cd /` first: the caller's cwd may be
# unreadable for that user, which makes initdb/pg_ctl complain.
as_pg() {
	if ((IS_ROOT)) && [[ $PG_USER != root ]]; then
		(cd / && runuser -u "$PG_USER" -- "$@")
	else
		"$@"
	fi
}

# For up: pick (and if needed create) the unprivileged user.
pg_ensure_user() {
	if ((!IS_ROOT)); then
		PG_USER=$(id -un)
	elif getent passwd postgres >/dev/null; then
		PG_USER=postgres
	else
		if ! getent passwd seatd-pg >/dev/null; then
			log "creating system user seatd-pg (the system has no 'postgres' user)"
			useradd --system --user-group --no-create-home --home-dir /nonexistent \
				--shell /usr/sbin/nologin seatd-pg
		fi
		PG_USER=seatd-pg
	fi
}

# For down/status: the owner of an existing data dir is who runs pg_ctl.
pg_owner_user() {
	if ((IS_ROOT)); then PG_USER=$(stat -c %U "$PG_DATA"); else PG_USER=$(id -un); fi
}

# Create $1 under /tmp for the cluster owner, refusing anything suspicious
# (a symlink, or a dir someone else pre-created in the world-writable /tmp).
make_private_tmp_dir() {
	local dir=$1 owner
	[[ -L $dir ]] && die "$dir is a symlink; refusing to use it"
	if [[ -e $dir ]]; then
		owner=$(stat -c %U "$dir")
		[[ $owner == "$PG_USER" || $owner == root ]] || die "$dir exists and is owned by $owner; remove it or fix ownership"
	else
		mkdir -m 700 "$dir"
	fi
	chown "$PG_USER:" "$dir"
	chmod 700 "$dir"
}

# Decide where the data dir lives and create its parents with the right owner.
pg_prepare_dirs() {
	mkdir -p "$DATA_DIR"
	if ((IS_ROOT)) && [[ ! -L $DATA_DIR/pg ]]; then
		# Can the unprivileged user reach .data/<profile>? (Needs x on every
		# ancestor, which /root, mode 700, does not give.)
		if ! as_pg test -x "$DATA_DIR"; then
			if [[ -e $DATA_DIR/pg ]]; then
				die "$DATA_DIR/pg exists but $PG_USER cannot reach it; remove it (or make the parents traversable) and rerun"
			fi
			local base
			base=/tmp/seatd-$PROFILE-$(printf '%s' "$ROOT" | sha256sum | cut -c1-12)
			log "$PG_USER cannot traverse to $DATA_DIR; using $base/pg (symlinked from .data/$PROFILE/pg)"
			make_private_tmp_dir "$base"
			ln -sfn "$base/pg" "$DATA_DIR/pg"
			ln -sfn "$base/postgres.log" "$DATA_DIR/postgres.log"
			pg_resolve_paths
		fi
	fi
	if ((PG_RELOCATED)); then
		# The relocated base may have vanished (/tmp is wiped on reboot).
		[[ -d $PG_HOME ]] || log "relocated data dir $PG_HOME is gone; creating a fresh cluster"
		# Always (re)check it: /tmp is world-writable.
		make_private_tmp_dir "$PG_HOME"
	fi
	if [[ ! -d $PG_DATA ]]; then
		mkdir -m 700 "$PG_DATA"
	fi
	# pg_ctl opens the log itself as the cluster owner.
	touch "$PG_LOG"
	if ((IS_ROOT)); then
		chown "$PG_USER:" "$PG_DATA" "$PG_LOG"
	fi
	chmod 700 "$PG_DATA"
}

pg_initialized() { [[ -s $PG_DATA/PG_VERSION ]]; }

pg_running() {
	pg_initialized || return 1
	as_pg "$PG_BIN/pg_ctl" status -D "$PG_DATA" >/dev/null 2>&1
}

# Port of the running postmaster (line 4 of postmaster.pid).
pg_running_port() { sed -n 4p "$PG_DATA/postmaster.pid" 2>/dev/null || true; }

pg_initdb() {
	local locale_opt=--no-locale
	# C.UTF-8 sorts by code point like C but knows upper/lower for non-ASCII.
	if locale -a 2>/dev/null | grep -qix 'c\.utf-\?8'; then locale_opt=--locale=C.UTF-8; fi
	log "initdb $PG_DATA (log: .data/$PROFILE/initdb.log)"
	if ! as_pg "$PG_BIN/initdb" -D "$PG_DATA" -A trust -U seatd --encoding=UTF8 "$locale_opt" \
		--no-instructions >"$DATA_DIR/initdb.log" 2>&1; then
		tail -n 20 "$DATA_DIR/initdb.log" >&2
		die "initdb failed"
	fi
	# Our settings live in seatd.conf, rewritten on every start (see pg_write_conf).
	printf "\n# Added by scripts/services.sh\ninclude_if_exists = 'seatd.conf'\n" >>"$PG_DATA/postgresql.conf"
}

pg_write_conf() {
	# Unix socket paths are limited to ~107 bytes; fall back to /tmp for deep paths.
	local sockdir=$PG_DATA
	((${#PG_DATA} <= 85)) || sockdir=/tmp
	{
		echo "# Generated by scripts/services.sh ($PROFILE profile) on every 'up'; edits are overwritten."
		echo "listen_addresses = '127.0.0.1'"
		echo "port = $PG_PORT"
		echo "unix_socket_directories = '$sockdir'"
		echo "max_connections = 300"
		echo "shared_buffers = 256MB"
		if [[ $PROFILE == test ]]; then
			# Throwaway data: trade crash safety for speed.
			echo "fsync = off"
			echo "synchronous_commit = off"
			echo "full_page_writes = off"
		fi
	} >"$PG_DATA/seatd.conf"
	((IS_ROOT)) && chown "$PG_USER:" "$PG_DATA/seatd.conf"
	return 0
}

pg_psql() {
	PGCONNECT_TIMEOUT=5 "$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U seatd "$@"
}

pg_up() {
	pg_ensure_user
	pg_resolve_paths
	pg_prepare_dirs
	if pg_running; then
		local port
		port=$(pg_running_port)
		if [[ -n $port && $port != "$PG_PORT" ]]; then
			die "postgres ($PROFILE) is already running on port $port, not $PG_PORT; run 'down $PROFILE' first"
		fi
		log "postgres ($PROFILE) already running on 127.0.0.1:$PG_PORT"
		return 0
	fi
	pg_initialized || pg_initdb
	pg_write_conf
	log "starting postgres ($PROFILE) on 127.0.0.1:$PG_PORT (log: .data/$PROFILE/postgres.log)"
	# 9>&- : don't let the daemon inherit our lock fd (it would hold the lock forever).
	if ! as_pg "$PG_BIN/pg_ctl" start -D "$PG_DATA" -l "$PG_LOG" -w -t 60 -s 9>&- >&2; then
		tail -n 20 "$PG_LOG" >&2 || true
		die "postgres failed to start"
	fi
	# pg_ctl -w waits for the postmaster; also wait for the TCP listener we use.
	local i
	for ((i = 0; i < 60; i++)); do
		"$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -U seatd && break
		sleep 0.5
	done
	((i < 60)) || die "postgres did not accept connections on 127.0.0.1:$PG_PORT within 30s"
	if [[ $(pg_psql -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'seatd'") != 1 ]]; then
		log "creating database seatd"
		"$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U seatd -O seatd seatd
	fi
}

pg_down() {
	pg_resolve_paths
	if [[ -z $PG_BIN ]] || ! pg_initialized; then
		log "postgres ($PROFILE): nothing to stop"
		return 0
	fi
	pg_owner_user
	if pg_running; then
		log "stopping postgres ($PROFILE)"
		# pg_ctl signals the PID recorded in postmaster.pid.
		as_pg "$PG_BIN/pg_ctl" stop -D "$PG_DATA" -m fast -w -t 60 -s >&2
	else
		log "postgres ($PROFILE) not running"
	fi
}

pg_status() {
	pg_resolve_paths
	if [[ -n $PG_BIN ]] && pg_initialized; then
		pg_owner_user
		if pg_running; then
			echo "postgres ($PROFILE): running on 127.0.0.1:$(pg_running_port), data $PG_DATA"
			return 0
		fi
	fi
	echo "postgres ($PROFILE): stopped"
	return 1
}

# ---------------------------------------------------------------------------
# Redis

REDIS_DIR=$DATA_DIR/redis
REDIS_PIDFILE=$DATA_DIR/redis.pid
REDIS_LOG=$DATA_DIR/redis.log

# Print the PID from our pidfile if it is a live redis-server started from
# our dir. The cwd check guards against a recycled PID belonging to some
# other process (or someone else's redis).
redis_pid() {
	[[ -s $REDIS_PIDFILE ]] || return 1
	local pid
	pid=$(<"$REDIS_PIDFILE")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	[[ $(cat "/proc/$pid/comm" 2>/dev/null) == redis-server ]] || return 1
	[[ $(readlink "/proc/$pid/cwd" 2>/dev/null) == "$REDIS_DIR" ]] || return 1
	echo "$pid"
}

redis_ping() { [[ $(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null) == PONG ]]; }

# The port a running redis-server listens on; it retitles itself "redis-server 127.0.0.1:PORT".
redis_running_port() { tr '\0' ' ' <"/proc/$1/cmdline" | sed -n 's/.*:\([0-9][0-9]*\).*/\1/p'; }

redis_up() {
	mkdir -p "$REDIS_DIR"
	local pid
	if pid=$(redis_pid); then
		local port
		port=$(redis_running_port "$pid")
		if [[ -n $port && $port != "$REDIS_PORT" ]]; then
			die "redis ($PROFILE) is already running on port $port, not $REDIS_PORT; run 'down $PROFILE' first"
		fi
		log "redis ($PROFILE) already running on 127.0.0.1:$REDIS_PORT (pid $pid)"
		return 0
	fi
	rm -f "$REDIS_PIDFILE" # stale
	log "starting redis ($PROFILE) on 127.0.0.1:$REDIS_PORT (log: .data/$PROFILE/redis.log)"
	redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$REDIS_DIR" --pidfile "$REDIS_PIDFILE" --logfile "$REDIS_LOG" \
		--daemonize yes 9>&- >&2
	# Redis writes its pidfile only after binding the port, so "our pidfile
	# is live AND the port answers" means it is our instance answering.
	local i
	for ((i = 0; i < 100; i++)); do
		redis_pid >/dev/null && redis_ping "$REDIS_PORT" && break
		sleep 0.1
	done
	if ((i >= 100)); then
		tail -n 20 "$REDIS_LOG" >&2 || true
		die "redis did not answer PING on 127.0.0.1:$REDIS_PORT within 10s"
	fi
}

# stop_daemon NAME PIDFN PIDFILE: SIGTERM the process PIDFN names (a
# function that prints our daemon's PID or fails), wait up to 10s, then
# SIGKILL it if the PID is still our daemon's; remove its pidfile.
stop_daemon() {
	local name=$1 pidfn=$2 pidfile=$3 pid i
	if ! pid=$("$pidfn"); then
		log "$name ($PROFILE) not running"
		rm -f "$pidfile"
		return 0
	fi
	log "stopping $name ($PROFILE) pid $pid"
	kill -TERM "$pid"
	for ((i = 0; i < 100; i++)); do
		[[ -e /proc/$pid ]] || break
		sleep 0.1
	done
	# Still there after 10s: force it, but only if the PID is still ours.
	if "$pidfn" >/dev/null; then
		log "$name did not exit on SIGTERM; sending SIGKILL to $pid"
		kill -KILL "$pid"
	fi
	rm -f "$pidfile"
}

redis_down() { stop_daemon redis redis_pid "$REDIS_PIDFILE"; }

redis_status() {
	local pid
	if pid=$(redis_pid); then
		echo "redis ($PROFILE): running on 127.0.0.1:$(redis_running_port "$pid") (pid $pid)"
		return 0
	fi
	echo "redis ($PROFILE): stopped"
	return 1
}

# ---------------------------------------------------------------------------
# Mailpit

MAILPIT_BIN=$ROOT/.bin/mailpit
MAILPIT_DB=$DATA_DIR/mailpit.db
MAILPIT_PIDFILE=$DATA_DIR/mailpit.pid
MAILPIT_LOG=$DATA_DIR/mailpit.log

# Print the PID from our pidfile if it is a live mailpit on our database
# (not a recycled PID, not someone else's Mailpit).
mailpit_pid() {
	[[ -s $MAILPIT_PIDFILE ]] || return 1
	local pid
	pid=$(<"$MAILPIT_PIDFILE")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	[[ $(cat "/proc/$pid/comm" 2>/dev/null) == mailpit ]] || return 1
	[[ $(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null) == *$'\n'"$MAILPIT_DB"$'\n'* ]] || return 1
	echo "$pid"
}

# The SMTP port of a running mailpit (its --smtp 127.0.0.1:PORT argument).
mailpit_running_port() { tr '\0' '\n' <"/proc/$1/cmdline" | sed -n '/^--smtp$/{n;s/.*:\([0-9][0-9]*\)$/\1/p}'; }

# Both ports accept connections (bash's /dev/tcp: no client needed).
mailpit_ready() {
	(exec 3<>"/dev/tcp/127.0.0.1/$SMTP_PORT") 2>/dev/null &&
		(exec 3<>"/dev/tcp/127.0.0.1/$MAILPIT_PORT") 2>/dev/null
}

mailpit_up() {
	mkdir -p "$DATA_DIR"
	local pid
	if pid=$(mailpit_pid); then
		local port
		port=$(mailpit_running_port "$pid")
		if [[ -n $port && $port != "$SMTP_PORT" ]]; then
			die "mailpit ($PROFILE) is already running with SMTP on port $port, not $SMTP_PORT; run 'down $PROFILE' first"
		fi
		log "mailpit ($PROFILE) already running: SMTP 127.0.0.1:$SMTP_PORT, inbox http://127.0.0.1:$MAILPIT_PORT (pid $pid)"
		return 0
	fi
	rm -f "$MAILPIT_PIDFILE" # stale
	# The pinned version, installed once (a stamp file makes later calls free).
	"${MAKE:-make}" -s --no-print-directory -C "$ROOT" mailpit 9>&- >&2 || die "could not install mailpit (make mailpit)"
	# Keep what tests send (they read it back) without growing for ever.
	local max=500
	[[ $PROFILE == dev ]] || max=10000
	log "starting mailpit ($PROFILE): SMTP 127.0.0.1:$SMTP_PORT, inbox http://127.0.0.1:$MAILPIT_PORT (log: .data/$PROFILE/mailpit.log)"
	# Its own session, no terminal, stdout away from our caller's $(...)
	# capture, and not the lock fd.
	setsid "$MAILPIT_BIN" --smtp "127.0.0.1:$SMTP_PORT" --listen "127.0.0.1:$MAILPIT_PORT" \
		--database "$MAILPIT_DB" --max "$max" --disable-version-check --smtp-disable-rdns \
		</dev/null >>"$MAILPIT_LOG" 2>&1 9>&- &
	pid=$!
	echo "$pid" >"$MAILPIT_PIDFILE"
	local i
	for ((i = 0; i < 100; i++)); do
		# (Until setsid has exec'd, the PID is not yet mailpit's.)
		[[ -e /proc/$pid ]] || break
		mailpit_pid >/dev/null && mailpit_ready && return 0
		sleep 0.1
	done
	tail -n 20 "$MAILPIT_LOG" >&2 || true
	die "mailpit did not answer on 127.0.0.1:$SMTP_PORT and http://127.0.0.1:$MAILPIT_PORT within 10s"
}

mailpit_down() { stop_daemon mailpit mailpit_pid "$MAILPIT_PIDFILE"; }

mailpit_status() {
	local pid
	if pid=$(mailpit_pid); then
		echo "mailpit ($PROFILE): SMTP on 127.0.0.1:$(mailpit_running_port "$pid"), inbox http://127.0.0.1:$MAILPIT_PORT (pid $pid)"
		return 0
	fi
	echo "mailpit ($PROFILE): stopped"
	return 1
}

# ---------------------------------------------------------------------------
# stripe-mock

STRIPE_MOCK_BIN=$ROOT/.bin/stripe-mock
STRIPE_MOCK_DIR=$DATA_DIR/stripe-mock
STRIPE_MOCK_PIDFILE=$DATA_DIR/stripe-mock.pid
STRIPE_MOCK_LOG=$DATA_DIR/stripe-mock.log

# Print the PID from our pidfile if it is a live stripe-mock started from
# our dir (a recycled PID, or someone else's stripe-mock, does not count).
stripe_mock_pid() {
	[[ -s $STRIPE_MOCK_PIDFILE ]] || return 1
	local pid
	pid=$(<"$STRIPE_MOCK_PIDFILE")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	[[ $(cat "/proc/$pid/comm" 2>/dev/null) == stripe-mock ]] || return 1
	[[ $(readlink "/proc/$pid/cwd" 2>/dev/null) == "$STRIPE_MOCK_DIR" ]] || return 1
	echo "$pid"
}

# The HTTP port a running stripe-mock was started with.
stripe_mock_running_port() { tr '\0' '\n' <"/proc/$1/cmdline" | sed -n '/^-http-port$/{n;p;}'; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

stripe_mock_up() {
	mkdir -p "$STRIPE_MOCK_DIR"
	local pid
	if pid=$(stripe_mock_pid); then
		local port
		port=$(stripe_mock_running_port "$pid")
		if [[ -n $port && $port != "$STRIPE_MOCK_PORT" ]]; then
			die "stripe-mock ($PROFILE) is already running on port $port, not $STRIPE_MOCK_PORT; run 'down $PROFILE' first"
		fi
		log "stripe-mock ($PROFILE) already running on 127.0.0.1:$STRIPE_MOCK_PORT (pid $pid)"
		return 0
	fi
	rm -f "$STRIPE_MOCK_PIDFILE" # stale
	# The Makefile pins the version; its stamp makes this a no-op once built.
	"${MAKE:-make}" -C "$ROOT" --no-print-directory stripe-mock >&2
	if port_open "$STRIPE_MOCK_PORT"; then
		die "127.0.0.1:$STRIPE_MOCK_PORT is taken by another program; set SEATD_STRIPE_MOCK_PORT"
	fi
	log "starting stripe-mock ($PROFILE) on 127.0.0.1:$STRIPE_MOCK_PORT (https $STRIPE_MOCK_HTTPS_PORT; log: .data/$PROFILE/stripe-mock.log)"
	# setsid: its own session, so a Ctrl-C meant for the caller does not
	# stop it; only `down` does, by PID. All output goes to the log (an
	# inherited stdout would keep $(services.sh up) waiting).
	(
		cd "$STRIPE_MOCK_DIR"
		exec setsid "$STRIPE_MOCK_BIN" -http-port "$STRIPE_MOCK_PORT" -https-port "$STRIPE_MOCK_HTTPS_PORT" \
			</dev/null >>"$STRIPE_MOCK_LOG" 2>&1 9>&-
	) &
	pid=$!
	echo "$pid" >"$STRIPE_MOCK_PIDFILE"
	# It loads Stripe's API description first (a second or two). Until its
	# exec the child is still a shell, so wait on the PID being alive (not
	# a zombie), then on the port and the PID being stripe-mock.
	local i
	for ((i = 0; i < 300; i++)); do
		[[ $(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1) =~ ^[RSD]$ ]] || break
		port_open "$STRIPE_MOCK_PORT" && stripe_mock_pid >/dev/null && return 0
		sleep 0.1
	done
	tail -n 20 "$STRIPE_MOCK_LOG" >&2 || true
	stripe_mock_down
	die "stripe-mock did not listen on 127.0.0.1:$STRIPE_MOCK_PORT"
}

stripe_mock_down() { stop_daemon stripe-mock stripe_mock_pid "$STRIPE_MOCK_PIDFILE"; }

stripe_mock_status() {
	local pid
	if pid=$(stripe_mock_pid); then
		echo "stripe-mock ($PROFILE): running on 127.0.0.1:$(stripe_mock_running_port "$pid") (pid $pid)"
		return 0
	fi
	echo "stripe-mock ($PROFILE): stopped"
	return 1
}

# ---------------------------------------------------------------------------
# main

# Serialize up/down for a profile (e.g. two `make` targets racing). The
# daemons are started with fd 9 closed so they don't keep holding the lock.
take_lock() {
	mkdir -p "$DATA_DIR"
	exec 9>"$DATA_DIR/.lock"
	flock -w 300 9 || die "timed out waiting for $DATA_DIR/.lock"
}

case $CMD in
env)
	print_env
	;;
install)
	ensure_binaries
	;;
up)
	ensure_binaries
	take_lock
	if ((MANAGE_PG)); then pg_up; else log "DATABASE_URL is set; not managing postgres"; fi
	if ((MANAGE_REDIS)); then redis_up; else log "REDIS_URL is set; not managing redis"; fi
	if ((MANAGE_MAIL)); then mailpit_up; else log "SEATD_SMTP_URL is set; not managing mailpit"; fi
	if ((MANAGE_STRIPE_MOCK)); then
		stripe_mock_up
	elif ((WANT_STRIPE_MOCK)); then
		log "SEATD_STRIPE_MOCK_URL is set; not managing stripe-mock"
	fi
	print_env
	;;
down)
	if [[ ! -d $DATA_DIR ]]; then
		log "no $DATA_DIR; nothing to stop"
		exit 0
	fi
	take_lock
	if ((MANAGE_PG)); then pg_down; else log "DATABASE_URL is set; not touching postgres"; fi
	if ((MANAGE_REDIS)); then redis_down; else log "REDIS_URL is set; not touching redis"; fi
	if ((MANAGE_MAIL)); then mailpit_down; else log "SEATD_SMTP_URL is set; not touching mailpit"; fi
	if ((MANAGE_STRIPE_MOCK)); then
		stripe_mock_down
	elif ((WANT_STRIPE_MOCK)); then
		log "SEATD_STRIPE_MOCK_URL is set; not touching stripe-mock"
	fi
	;;
status)
	rc=0
	if ((MANAGE_PG)); then pg_status || rc=3; else echo "postgres: external (DATABASE_URL set)"; fi
	if ((MANAGE_REDIS)); then redis_status || rc=3; else echo "redis: external (REDIS_URL set)"; fi
	if ((MANAGE_MAIL)); then mailpit_status || rc=3; else echo "mailpit: external (SEATD_SMTP_URL set)"; fi
	if ((MANAGE_STRIPE_MOCK)); then
		stripe_mock_status || rc=3
	elif ((WANT_STRIPE_MOCK)); then
		echo "stripe-mock: external (SEATD_STRIPE_MOCK_URL set)"
	fi
	exit $rc
	;;
esac
