# shellcheck shell=bash
# Helpers shared by scripts/*.sh. Source this file; it does not run anything.
#
# Convention: everything meant for humans goes to stderr, so stdout stays
# clean for machine-readable output (e.g. `eval "$(scripts/services.sh env)"`).

# With SEATD_LOG_T0 (epoch seconds) set, as scripts/test.sh does, each line
# says how long the run has taken so far: a slow phase shows in the log.
log() {
	if [[ -n ${SEATD_LOG_T0:-} ]]; then
		printf '[%s %ds] %s\n' "${LOG_TAG:-seatd}" "$((EPOCHSECONDS - SEATD_LOG_T0))" "$*" >&2
	else
		printf '[%s] %s\n' "${LOG_TAG:-seatd}" "$*" >&2
	fi
}
die() { log "error: $*"; exit 1; }

# as_root CMD...: run CMD with root privileges. Uses sudo only when we are not
# root and sudo exists; otherwise fails with a clear message.
as_root() {
	if [[ $(id -u) -eq 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root to run '$*' (not root and no sudo available)"
	fi
}

# apt_install PKG...: install Debian packages non-interactively.
# `apt-get update` runs at most once per script invocation: on a fresh machine
# the package lists are empty, so an install without it finds nothing.
# Package lists fetched in the last hour (by another script of the same run)
# count as updated too.
_APT_UPDATED=0
apt_install() {
	command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install $* manually"
	if [[ $_APT_UPDATED -eq 0 ]] && find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -mmin -60 2>/dev/null | grep -q .; then
		_APT_UPDATED=1
	fi
	if [[ $_APT_UPDATED -eq 0 ]]; then
		log "apt-get update"
		as_root apt-get update >&2
		_APT_UPDATED=1
	fi
	log "apt-get install -y $*"
	# env(1) so DEBIAN_FRONTEND survives sudo's environment reset.
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >&2
}
