import os

from studyapp.handler import get_wsgi_application  # Django's, refusing charsets up front

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studyapp.settings")
application = get_wsgi_application()

# gunicorn and runserver serve requests from here: statements time out as a request's do.
from studyapp.common.db import serve_requests_with_web_timeouts  # noqa: E402

serve_requests_with_web_timeouts()
