"""The simulated chats' launcher, as the tests import it (hosts/sim/launch.py)."""

from hosts.sim.launch import ROOT, SimChat, SimFleet

__all__ = ["ROOT", "SimChat", "SimFleet"]
