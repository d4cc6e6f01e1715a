#!/bin/sh
# An apt repository on file: holding one package, as a Debian mirror would
# serve it, and apt-get install from it: sh make-deb.sh NAME.
# The package ships a shared library, so dpkg's trigger reruns ldconfig
# (a new /etc/ld.so.cache) as real library packages do.
set -e
name=$1
pkg=/tmp/deb-$name repo=/opt/repo-$name
mkdir -p $pkg/DEBIAN $pkg/usr/lib/x86_64-linux-gnu $repo
printf 'Package: %s\nVersion: 1.0\nArchitecture: all\nMaintainer: forge <forge@localhost>\nDescription: test package\n' "$name" > $pkg/DEBIAN/control
printf 'activate-noawait ldconfig\n' > $pkg/DEBIAN/triggers
cp /usr/lib/x86_64-linux-gnu/libz.so.1 $pkg/usr/lib/x86_64-linux-gnu/lib$name.so.1
dpkg-deb --build $pkg $repo/${name}_1.0_all.deb >/dev/null
cd $repo
{ dpkg-deb -f ${name}_1.0_all.deb; echo "Filename: ./${name}_1.0_all.deb";
  echo "Size: $(stat -c %s ${name}_1.0_all.deb)";
  echo "SHA256: $(sha256sum ${name}_1.0_all.deb | cut -d' ' -f1)"; echo; } > Packages
echo "deb [trusted=yes] file:$repo ./" > /etc/apt/sources.list.d/$name.list
apt-get update -qq 2>/dev/null
apt-get install -y -qq $name >/dev/null
