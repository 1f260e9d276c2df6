"""The rows of each group (see GROUPS in cli): each function takes the Context (and a link) and
returns the Rows it measured, with RangeFS mounted with the Context's policy.

- reads: cold, warm, ttfb, parallel, rss
- fio: fio
- media: media, stream
- listing: ls, many, web
- prefetch: prefetch
- library: library
- bucket: bucket
- mirrors: mirrors
- shares: the rows the webdav and sftp groups share
- webdav: webdav
- sftp: sftp
- subsonic: subsonic
"""
