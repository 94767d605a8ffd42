"""Run by a side virtualenv's python: read a subunit v2 stream (stdin) and
print {test id: status} as JSON, the last status each test reached."""
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
            text = []
            for name, content in test['details'].items():
                if name == 'traceback':
                    text.append(content.as_text())
            details[test['id']] = ''.join(text)[-2000:]
    stream = subunit.ByteStreamToStreamResult(sys.stdin.buffer, non_subunit_name='stdout')
    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    stream.run(result)
    result.stopTestRun()
    json.dump({'results': results, 'failures': details}, sys.stdout)


if __name__ == '__main__':
    main()
