#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Makes a signed APT repository of the packages build-deb.sh --suite made:
#
#   packaging/apt-repo.sh --out REPO [--gnupghome DIR] [--key ID] SUITE=DIR...
#
# Each DIR is a build-deb.sh --suite SUITE --out DIR (its .changes names the
# packages taken). REPO (new or empty) gets, for each SUITE, with
# apt-ftparchive (apt-utils):
#   pool/SUITE/main/m/mysqltrace/*.deb               the packages (and -dbgsym)
#   dists/SUITE/main/binary-amd64/Packages{,.gz}
#   dists/SUITE/{Release,InRelease,Release.gpg}      signed (SHA-512)
# and the public key, mysqltrace-archive-keyring.gpg (binary, for apt's
# signed-by=) and .asc. So a machine of that suite installs with
#   deb [signed-by=/etc/apt/keyrings/mysqltrace.gpg] URI SUITE main
# and `apt-get install mysqltrace` (README.md: "Install from the APT repository").
#
# The signing key: the secret key ID (default: the only one) of the GnuPG
# home DIR. Without --gnupghome, or when DIR holds no secret key, a new
# ed25519 signing key is made (in DIR, or in a temporary home that is removed
# afterwards: a throwaway key for tests).
set -euo pipefail

out=
gnupghome=
key=
suites=()
while [[ $# -gt 0 ]]; do
    case $1 in
    --out) out=$2; shift ;;
    --gnupghome) gnupghome=$2; shift ;;
    --key) key=$2; shift ;;
    -h | --help) sed -n '4,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *=*) suites+=("$1") ;;
    *) echo "apt-repo: unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done

die() {
    echo "apt-repo: $*" >&2
    exit 1
}
[[ -n $out && ${#suites[@]} -gt 0 ]] || die "usage: apt-repo.sh --out REPO [--gnupghome DIR] [--key ID] SUITE=DIR..."
for tool in apt-ftparchive gpg dpkg-deb; do
    command -v "$tool" >/dev/null || die "$tool is missing (scripts/install-deps.sh installs it)"
done
if [[ -e $out ]]; then
    [[ -d $out && -z $(ls -A "$out") ]] || die "$out exists and is not an empty directory"
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

tmp=$(mktemp -d -t mysqltrace-apt-repo-XXXXXX)
if [[ -z $gnupghome ]]; then
    gnupghome=$tmp/gnupg
fi
mkdir -p "$gnupghome"
chmod 700 "$gnupghome"
gnupghome=$(cd "$gnupghome" && pwd)
# gpg starts an agent for the home; it would outlive this script.
trap 'gpgconf --homedir "$gnupghome" --kill gpg-agent 2>/dev/null || true; rm -rf "$tmp"' EXIT
gpg_() {
    gpg --homedir "$gnupghome" --batch --quiet "$@"
}
if [[ -z $key ]]; then
    mapfile -t keys < <(gpg_ --list-secret-keys --with-colons 2>/dev/null | awk -F: '$1 == "fpr" { print $10 }')
    if [[ ${#keys[@]} -eq 0 ]]; then
        # No expiry: the repository's users would otherwise lose updates on
        # a date nobody remembers; replace the key instead.
        gpg_ --passphrase '' --quick-gen-key \
            "mysqltrace archive signing key <mysqltrace@example.org>" ed25519 sign never
        mapfile -t keys < <(gpg_ --list-secret-keys --with-colons | awk -F: '$1 == "fpr" { print $10 }')
        echo "apt-repo: made signing key ${keys[0]} in $gnupghome" >&2
    fi
    [[ ${#keys[@]} -eq 1 ]] || die "$gnupghome holds ${#keys[@]} secret keys: name one with --key"
    key=${keys[0]}
fi
gpg_ --export "$key" >"$out/mysqltrace-archive-keyring.gpg"
gpg_ --armor --export "$key" >"$out/mysqltrace-archive-keyring.asc"
[[ -s $out/mysqltrace-archive-keyring.gpg ]] || die "no public key $key in $gnupghome"

for spec in "${suites[@]}"; do
    suite=${spec%%=*} dir=${spec#*=}
    [[ $suite =~ ^[a-z]+$ ]] || die "bad suite name '$suite'"
    changes=("$dir"/mysqltrace_*~deb*_amd64.changes)
    [[ ${#changes[@]} -eq 1 && -f ${changes[0]} ]] || die "not one mysqltrace .changes of a suite build in $dir"
    dist=$(sed -n 's/^Distribution: //p' "${changes[0]}")
    [[ $dist == "$suite" ]] || die "${changes[0]} is for $dist, not $suite"
    pool=pool/$suite/main/m/mysqltrace
    mkdir -p "$out/$pool" "$out/dists/$suite/main/binary-amd64"
    while read -r name; do
        [[ $name == *.deb ]] && cp "$dir/$name" "$out/$pool/"
    done < <(sed -n '/^Files:/,/^[^ ]/s/^ [0-9a-f]\{32\} [0-9]* [^ ]* [^ ]* //p' "${changes[0]}")
    (cd "$out" && apt-ftparchive packages "pool/$suite") >"$out/dists/$suite/main/binary-amd64/Packages"
    gzip -9n -k "$out/dists/$suite/main/binary-amd64/Packages"
    (cd "$out/dists/$suite" && apt-ftparchive \
        -o APT::FTPArchive::Release::Origin=mysqltrace \
        -o APT::FTPArchive::Release::Label=mysqltrace \
        -o APT::FTPArchive::Release::Suite="$suite" \
        -o APT::FTPArchive::Release::Codename="$suite" \
        -o APT::FTPArchive::Release::Architectures=amd64 \
        -o APT::FTPArchive::Release::Components=main \
        -o APT::FTPArchive::Release::Description="mysqltrace for Debian $suite" \
        release .) >"$tmp/Release"
    mv "$tmp/Release" "$out/dists/$suite/Release"
    gpg_ --local-user "$key" --digest-algo SHA512 --clearsign \
        -o "$out/dists/$suite/InRelease" "$out/dists/$suite/Release"
    gpg_ --local-user "$key" --digest-algo SHA512 --armor --detach-sign \
        -o "$out/dists/$suite/Release.gpg" "$out/dists/$suite/Release"
    echo "apt-repo: $suite: $(grep -c '^Package:' "$out/dists/$suite/main/binary-amd64/Packages") packages" >&2
done
chmod -R a+rX "$out"
echo "apt-repo: $out signed by $key" >&2
