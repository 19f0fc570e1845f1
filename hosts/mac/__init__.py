"""What runs on a Mac: the helper, the local host, the registry, sockets, transcripts,
settings, platforms and Codex lists. Standard library only (macOS's stock python3 is
3.9): `hosts/bundle.py` ships this folder, whole, to every fleet Mac."""
