"""The route table: every URL of the API and its handler per method.

Each handler module declares its own ``ROUTES``; this is their union.
"""
from placement_server.handlers import aggregate
from placement_server.handlers import allocation
from placement_server.handlers import allocation_candidate
from placement_server.handlers import explain
from placement_server.handlers import inventory
from placement_server.handlers import reshaper
from placement_server.handlers import resource_class
from placement_server.handlers import resource_provider
from placement_server.handlers import root
from placement_server.handlers import trait
from placement_server.handlers import usage

ROUTES = [('/', {'GET': root.home})]
for _module in (resource_provider, inventory, aggregate, trait, resource_class,
                allocation, usage, allocation_candidate, reshaper, explain):
    ROUTES.extend(_module.ROUTES)
