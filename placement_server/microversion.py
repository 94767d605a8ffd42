"""Microversions: the version table and the negotiation.

A request names its version in ``OpenStack-API-Version: placement X.Y``
(or ``latest``); without the header it gets the minimum. The header is
read by microversion-parse, the library OpenStack services share, so it
is understood as every other service understands it. Handlers ask
``req.version >= (1, 14)``-style questions of the ``Version`` they find on
the request.
"""
import re
from typing import Self

import microversion_parse

SERVICE_TYPE = 'placement'
HEADER = 'OpenStack-API-Version'

# One line per version: what a client gains by asking for it.
VERSIONS = [
    '1.0',   # the initial API
    '1.1',   # GET/PUT /resource_providers/{uuid}/aggregates
    '1.2',   # custom resource classes: /resource_classes
    '1.3',   # member_of filter on GET /resource_providers
    '1.4',   # resources filter on GET /resource_providers
    '1.5',   # DELETE /resource_providers/{uuid}/inventories
    '1.6',   # traits: /traits and /resource_providers/{uuid}/traits
    '1.7',   # PUT /resource_classes/{name} creates, no body
    '1.8',   # project_id and user_id required on PUT /allocations
    '1.9',   # GET /usages?project_id=&user_id=
    '1.10',  # GET /allocation_candidates
    '1.11',  # allocations links in provider representations
    '1.12',  # PUT /allocations takes the dict format of allocation requests
    '1.13',  # POST /allocations for many consumers at once
    '1.14',  # nested providers: parent_provider_uuid, root_provider_uuid, in_tree
    '1.15',  # Last-Modified and Cache-Control headers
    '1.16',  # limit on GET /allocation_candidates
    '1.17',  # required traits on GET /allocation_candidates
    '1.18',  # required traits on GET /resource_providers
    '1.19',  # aggregates carry the provider generation; PUT needs it
    '1.20',  # POST /resource_providers returns the provider
    '1.21',  # member_of on GET /allocation_candidates
    '1.22',  # forbidden traits (!TRAIT)
    '1.23',  # error "code" in JSON error bodies
    '1.24',  # repeated member_of (AND of ORs)
    '1.25',  # granular request groups on GET /allocation_candidates
    '1.26',  # inventories with reserved equal to total
    '1.27',  # provider_summaries list every resource class of a provider
    '1.28',  # consumer generations on allocation writes
    '1.29',  # nested providers in allocation candidates
    '1.30',  # POST /reshaper
    '1.31',  # in_tree on GET /allocation_candidates
    '1.32',  # forbidden aggregates (member_of=!)
    '1.33',  # request group suffixes may be strings
    '1.34',  # mappings in allocation requests
    '1.35',  # root_required on GET /allocation_candidates
    '1.36',  # same_subtree on GET /allocation_candidates
    '1.37',  # providers may be re-parented and un-parented
    '1.38',  # consumer types
    '1.39',  # in: any-of syntax in required traits
]


class Version(tuple[int, int]):
    """A (major, minor) pair that compares like one."""

    def __new__(cls, major: int, minor: int) -> Self:
        return super().__new__(cls, (major, minor))

    @classmethod
    def parse(cls, text: str) -> Self:
        m = re.fullmatch(r'(\d+)\.(\d+)', text.strip())
        if not m:
            raise ValueError(text)
        return cls(int(m.group(1)), int(m.group(2)))

    def __str__(self) -> str:
        return '%d.%d' % self


MIN_VERSION = Version.parse(VERSIONS[0])
MAX_VERSION = Version.parse(VERSIONS[-1])
# Each version offered, by its canonical text: one Version object each.
_OFFERED = {text: Version.parse(text) for text in VERSIONS}


class InvalidVersion(ValueError):
    """The header is not a version at all (400)."""


class UnacceptableVersion(ValueError):
    """A well-formed version this server does not offer (406)."""


# Versions negotiated so far, by header text: clients send the same few
# headers over and over, and reading one costs microversion-parse ~10 us.
_NEGOTIATED: dict[str, Version] = {}
_NEGOTIATED_MAX = 256


def negotiate(header_value: str | None) -> Version:
    """Pick the version for a request from its header (or None: the minimum)."""
    if not header_value:
        return MIN_VERSION
    known = _NEGOTIATED.get(header_value)
    if known is not None:
        return known
    version = _negotiate(header_value)
    if len(_NEGOTIATED) < _NEGOTIATED_MAX:   # bounded: headers are the client's
        _NEGOTIATED[header_value] = version
    return version


def _negotiate(header_value: str) -> Version:
    # The header may name several services: "placement 1.4, compute 2.1".
    wanted = microversion_parse.get_version(
        {microversion_parse.STANDARD_HEADER: header_value}, SERVICE_TYPE)
    if wanted is None:
        return MIN_VERSION
    if wanted == 'latest':
        return MAX_VERSION
    try:
        parsed = microversion_parse.parse_version_string(wanted)
    except TypeError:
        raise InvalidVersion('invalid version string: %s' % wanted)
    version = _OFFERED.get(str(parsed))
    if version is None:
        raise UnacceptableVersion('Unacceptable version header: %s' % wanted)
    return version


def response_header(version: Version) -> str:
    return '%s %s' % (SERVICE_TYPE, version)
