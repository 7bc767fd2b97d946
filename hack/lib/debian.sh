# debian.sh — sourced by the scripts that install a test tool from Debian's packages
# (chromium.sh, alertmanager.sh, prometheus.sh). It defines one function:
#
#   debian_install PINNED PKG...
#
# installs each PKG at version PINNED with apt-get, as root or with password-less sudo;
# when the mirror no longer serves PINNED (Debian drops superseded security updates),
# it installs the first PKG's candidate instead and says so. It needs the caller's
# say (a message with the caller's prefix) and unavailable WHY (what the caller does
# when nothing can be installed here: skip or fail), and sets version to what it
# installed. Packages that install a service are not started (containers deny it).

debian_install() {
	local pinned=$1
	shift
	command -v apt-get >/dev/null || unavailable "no apt-get (not Debian)"
	local sudo=()
	if [[ $(id -u) -ne 0 ]]; then
		command -v sudo >/dev/null && sudo -n true 2>/dev/null || unavailable "not root and no password-less sudo"
		sudo=(sudo -n)
	fi
	export DEBIAN_FRONTEND=noninteractive
	# A fresh container has no package lists; a machine that has them may hold old ones
	# that name a version the mirror no longer serves.
	"${sudo[@]}" apt-get update -qq
	version=$pinned
	if ! apt-cache madison "$1" | grep -qF "| $pinned |"; then
		version=$(apt-cache policy "$1" | awk '/Candidate:/ {print $2}')
		[[ -n "$version" && "$version" != "(none)" ]] || unavailable "Debian offers no $1 package here"
		say "the pinned $pinned is no longer on the mirror; installing Debian's candidate $version"
	fi
	local pkgs=() p
	for p in "$@"; do pkgs+=("$p=$version"); done
	"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${pkgs[@]}"
}
