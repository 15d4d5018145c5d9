#!/usr/bin/env bash
# Installs the Debian packages tlblab needs (listed in scripts/debian-packages.txt, one per line,
# pinned where it matters) when any is missing. Runs as part of `make` set-up; a no-op when all
# are present.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
missing=()
while read -r pkg _; do
  [[ -z "$pkg" || "$pkg" == \#* ]] && continue
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done < "$here/debian-packages.txt"
# Says what it does at each step (an install of valgrind and gcc-multilib takes minutes, and a
# silent one looked hung): apt's own progress goes to stderr, one line a package.
if ((${#missing[@]})); then
  echo "sysdeps: missing Debian packages: ${missing[*]}" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  set +e +o pipefail
  # Another apt (a fresh VM's unattended upgrades, a second `make setup`) may hold the dpkg lock:
  # wait for it, up to 15 minutes, rather than fail at once (apt >= 1.9.11 reads this option).
  lock_wait=(-o DPkg::Lock::Timeout=900)
  echo "sysdeps: apt-get update ..." >&2
  $SUDO apt-get update "${lock_wait[@]}" -q 2>&1 | { grep --line-buffered -E '^(Get:|Err:|E:|W:)' || true; } | sed -u 's/^/sysdeps:   /' >&2
  echo "sysdeps: apt-get install ${missing[*]} ..." >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install "${lock_wait[@]}" -y -q -o Dpkg::Use-Pty=0 "${missing[@]}" 2>&1 \
    | { grep --line-buffered -E '^(Get:|Setting up|Unpacking|E:)' || true; } | sed -u 's/^/sysdeps:   /' >&2
  status=${PIPESTATUS[0]}
  set -e -o pipefail
  if ((status != 0)); then
    echo "sysdeps: apt-get install failed (exit $status): install ${missing[*]} by hand" >&2
    exit "$status"
  fi
  echo "sysdeps: installed ${missing[*]}" >&2
else
  echo "sysdeps: every Debian package of scripts/debian-packages.txt is installed" >&2
fi
