#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine: Go modules and the
# InfiniBand tools the integration tests check ibsm against. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=()
command -v ibdmchk >/dev/null 2>&1 || pkgs+=(ibutils)
command -v ibsim >/dev/null 2>&1 || pkgs+=(ibsim-utils)
command -v ibnetdiscover >/dev/null 2>&1 || pkgs+=(infiniband-diags)
command -v opensm >/dev/null 2>&1 || pkgs+=(opensm)
command -v chromium >/dev/null 2>&1 || pkgs+=(chromium) # renders ibsm report's HTML (integration/report_test.go)
command -v logrotate >/dev/null 2>&1 || pkgs+=(logrotate) # rotates the packaged daemon's log (integration/deb_test.go)
[ -n "$(ls /usr/lib/*/umad2sim/libumad2sim.so /usr/lib/*/libumad2sim.so 2>/dev/null)" ] || pkgs+=(libumad2sim0)
if [ ${#pkgs[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "setup: need Debian packages ${pkgs[*]}; run as root or: sudo apt-get install ${pkgs[*]}" >&2
		exit 1
	fi
	echo "setup: installing ${pkgs[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${pkgs[@]}" >/dev/null
fi
go mod download
