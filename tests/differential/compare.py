"""What is compared of two answers, once normalised.

An answer is (status, body). Normalised away: the error's request_id,
timestamps, custom class and trait names of earlier replays (upstream
keeps them, see generator.py), and order wherever upstream's is the
database's: every list is compared as a sorted list (allocation requests
and provider summaries' traits included, so candidates compare as sets).
A provider created without a uuid gets one from each server: both are
replaced by the same name (runner.Pair.note_generated). Everything else
is compared: status, error code, generations, amounts, links, and the
error text (a difference in the error text alone is told
apart as wording: runner.Pair(texts=False) collects it without stopping).
"""
import json

TIMESTAMPS = ('created_at', 'updated_at')


def normalise(status, body, token, aliases=None):
    """``aliases`` {uuid the server generated: the name both sides share}."""
    return status, _norm(body, token, aliases or {})


def _norm(value, token, aliases):
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in TIMESTAMPS or key == 'request_id':
                continue
            out[_alias(key, aliases)] = _norm(item, token, aliases)
        return out
    if isinstance(value, list):
        items = [_norm(v, token, aliases) for v in value if not _foreign(v, token)]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    return _alias(value, aliases)


def _alias(value, aliases):
    if isinstance(value, str):
        for uuid, name in aliases.items():
            value = value.replace(uuid, name)
    return value


def _foreign(value, token):
    """A custom class or trait another replay made."""
    name = value.get('name') if isinstance(value, dict) else value
    return (isinstance(name, str) and name.startswith('CUSTOM_D') and token not in name)


def without_texts(answer):
    """The answer with its error texts left out (to tell wording apart)."""
    status, body = answer
    if isinstance(body, dict) and isinstance(body.get('errors'), list):
        body = dict(body, errors=[dict(e, detail=None) for e in body['errors']])
    return status, body
