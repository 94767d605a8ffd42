"""Run by a side virtualenv's python: read a subunit v2 stream (stdin) and
print {test id: status} as JSON, the last status each test reached, and
for each failure its traceback and the warnings and errors the test
logged (what the service under test said, often the only clue)."""
import json
import sys

import subunit
import testtools


def main():
    results = {}
    details = {}

    def on_test(test):
        results[test['id']] = test['status']
        if test['status'] == 'fail':
            found = test['details']
            said = [line for name in ('pythonlogging', 'stderr') if name in found
                    for line in found[name].as_text().splitlines()
                    if ' WARNING ' in line or ' ERROR ' in line]
            details[test['id']] = ('\n'.join(said)[-3000:] + '\n' if said else '') + (
                found['traceback'].as_text()[-2000:] if 'traceback' in found else '')
    stream = subunit.ByteStreamToStreamResult(sys.stdin.buffer, non_subunit_name='stdout')
    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    stream.run(result)
    result.stopTestRun()
    json.dump({'results': results, 'failures': details}, sys.stdout)


if __name__ == '__main__':
    main()
