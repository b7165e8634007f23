;;; SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
;;; lisphot.lisp - a Lisp program with two hot functions under a driver, for
;;; Debian's sbcl (tests/integration/test_sbcl.py): `sbcl --script lisphot.lisp SECONDS`.
;;; ALPHA-WORK runs about twice as long per round as BETA-WORK. Prints "ready"
;;; once running, then spins until SECONDS have passed.

(defpackage :lisphot (:use :cl))
(in-package :lisphot)

(declaim (optimize (speed 1) (debug 1) (safety 1)))

(defun alpha-work (n)
  (let ((acc 0))
    (declare (fixnum acc))
    (dotimes (i (* 2 n) acc)
      (setf acc (logand (+ (* acc 31) i) #xffffff)))))

(defun beta-work (n)
  (let ((acc 0))
    (declare (fixnum acc))
    (dotimes (i n acc)
      (setf acc (logand (+ (* acc 17) i 7) #xffffff)))))

(defun drive (seconds)
  (let ((until (+ (get-internal-real-time)
                  (* seconds internal-time-units-per-second)))
        (sink 0))
    (loop while (< (get-internal-real-time) until)
          do (setf sink (logxor sink (alpha-work 200000) (beta-work 200000))))
    sink))

(format t "ready~%")
(finish-output)
(drive (parse-integer (or (second sb-ext:*posix-argv*) "10")))
